import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Store
import Synchronization

/// Delivers the alert outbox: each alert's body POSTed to its rule's webhook with `Idempotency-Key: alert:RULE:KEY`,
/// retried by the forwarding schedule until ``AlertRule/maximumAge``, then dead (``AlertBook/retry(rule:now:)`` puts
/// it back). Every receiver runs one; claims are leases, so an alert is delivered again after a receiver dies
/// mid-delivery, with the same key. Redirects are not followed.
final class AlertSender: Service, Sendable {
    let store: StoreDatabase
    let schedule: ForwardingSchedule
    let logger: Logger
    private let metrics: any MetricsFactory
    private let loop = ClaimLoop()
    /// Deliveries in flight from this receiver.
    private let inFlight = Mutex(0)

    /// Deliveries in flight from one receiver at most.
    static let concurrency = 8

    init(store: StoreDatabase, schedule: ForwardingSchedule, logger: Logger, metrics: any MetricsFactory) {
        self.store = store
        self.schedule = schedule
        self.logger = logger
        self.metrics = metrics
    }

    /// Asks the sender to claim now (alerts were just queued).
    func wake() { loop.wake() }

    /// How often the outbox is looked at: a quarter of the first backoff, between 20 ms and a second.
    var pollInterval: TimeInterval { max(0.02, min(1, schedule.initialBackoff / 4)) }

    func run() async throws {
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        await loop.run(every: pollInterval, claim: claimDue) { delivery in
            await self.deliver(delivery, client: client)
            self.inFlight.withLock { $0 -= 1 }
        }
        try? await client.shutdown()
    }

    private func claimDue() async -> [AlertDelivery] {
        let free = Self.concurrency - inFlight.withLock { $0 }
        guard free > 0 else { return [] }
        do {
            let claimed = try await store.alerts.claim(limit: free)
            inFlight.withLock { $0 += claimed.count }
            return claimed
        } catch {
            logger.error("cannot claim alerts", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// One attempt for one claimed alert, and its outcome recorded.
    func deliver(_ delivery: AlertDelivery, client: HTTPClient) async {
        let sent = await PartnerRequest.send(delivery, client: client)
        Counter(label: "countersign_alert_attempts_total", dimensions: [("rule", delivery.rule), ("answer", sent.label)], factory: metrics).increment()
        do {
            guard let failure = sent.failure else {
                try await store.alerts.delivered(delivery)
                return
            }
            let decision = schedule.afterFailure(attempt: delivery.attempts + 1, now: Date(), deadline: delivery.deadline,
                                                 retryAfter: sent.retryAfter, jitter: Double.random(in: 0..<1))
            if decision == .dead {
                logger.warning("an alert could not be delivered before its deadline; it is a dead letter", metadata: [
                    "rule": "\(delivery.rule)", "alert": "\(delivery.key)", "error": "\(failure)", "then": "countersign alerts retry \(delivery.rule)",
                ])
            }
            try await store.alerts.failed(delivery, answer: sent.label, error: failure, decision: decision)
        } catch {
            // The claim lapses and the alert is delivered again, with the same idempotency key.
            logger.error("cannot record an alert's delivery", metadata: ["alert": "\(delivery.id)", "error": "\(error)"])
        }
    }
}
