import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Store

/// Checks every alert rule every `interval` (``AlertBook/check(now:)``) and wakes the sender when alerts were queued.
/// Every receiver runs one; a rule's state moves by compare-and-set, so receivers checking together queue an alert once.
struct AlertWatcher: Service {
    let store: StoreDatabase
    let interval: TimeInterval
    let sender: AlertSender
    let logger: Logger
    let metrics: any MetricsFactory

    func run() async throws {
        await PeriodicRounds.run {
            do {
                let queued = try await store.alerts.check()
                for event in queued {
                    Counter(label: "countersign_alerts_total", dimensions: [("rule", event.rule), ("state", event.state.rawValue)], factory: metrics).increment()
                    logger.notice("alert", metadata: ["rule": "\(event.rule)", "state": "\(event.state.rawValue)", "summary": "\(event.summary)"])
                }
                if !queued.isEmpty { sender.wake() }
            } catch {
                logger.error("cannot check the alert rules", metadata: ["error": "\(error)"])
            }
            return .milliseconds(Int64(interval * 1000))
        }
    }
}
