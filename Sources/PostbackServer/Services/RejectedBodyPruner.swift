import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Store

/// Empties the bodies of rejected requests older than the retention, at start and then every `interval`, 10,000
/// receipts a transaction so no transaction holds the writer long. Several receivers may run it; each round is safe to
/// repeat.
final class RejectedBodyPruner: Service, Sendable {
    let store: StoreDatabase
    /// Seconds a rejected body is kept.
    let retention: TimeInterval
    /// Seconds between rounds.
    let interval: TimeInterval
    let logger: Logger
    private let pruned = Counter(label: "countersign_rejected_bodies_pruned_total")

    init(store: StoreDatabase, retention: TimeInterval, interval: TimeInterval = 3600, logger: Logger) {
        self.store = store
        self.retention = retention
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                let total = try await round()
                if total > 0 { logger.info("pruned the bodies of rejected requests", metadata: ["receipts": "\(total)"]) }
            } catch {
                logger.error("cannot prune the bodies of rejected requests", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: .seconds(interval)) }
        }
    }

    /// Prunes until no rejected body older than the retention is left; returns how many receipts were emptied.
    func round() async throws -> Int {
        let cutoff = Date().addingTimeInterval(-retention)
        var total = 0
        while !Task.isShuttingDownGracefully {
            let count = try await store.rejectedBodies.prune(receivedBefore: cutoff, limit: 10_000)
            total += count
            pruned.increment(by: count)
            if count < 10_000 { break }
        }
        return total
    }
}
