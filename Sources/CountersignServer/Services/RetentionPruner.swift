import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Store

/// Deletes what is kept only for a while (``Retention``): receipts of rejected requests older than their retention,
/// unverifiable postbacks older than theirs, and the arrival counts of each past the same retention (verified ones after
/// ``ArrivalLog/verifiedRetentionDays``). At start and then every `interval`, at most 1,000 rows a transaction
/// so no transaction holds the writer long. Several receivers may run it; each round is safe to repeat.
final class RetentionPruner: Service, Sendable {
    let store: StoreDatabase
    /// Seconds a rejected request's receipt is kept.
    let rejectedRetention: TimeInterval
    /// Seconds an unverifiable postback is kept.
    let unverifiableRetention: TimeInterval
    /// Seconds between rounds.
    let interval: TimeInterval
    let logger: Logger
    private let prunedRejected: Counter
    private let prunedUnverifiable: Counter
    private let prunedArrivals: Counter
    /// Rows a transaction deletes at most.
    static let chunk = 1000

    init(store: StoreDatabase, rejectedRetention: TimeInterval, unverifiableRetention: TimeInterval, interval: TimeInterval = 3600, logger: Logger,
         metrics: any MetricsFactory) {
        self.store = store
        prunedRejected = Counter(label: "countersign_pruned_total", dimensions: [("kind", "rejected_receipt")], factory: metrics)
        prunedUnverifiable = Counter(label: "countersign_pruned_total", dimensions: [("kind", "unverifiable")], factory: metrics)
        prunedArrivals = Counter(label: "countersign_pruned_total", dimensions: [("kind", "arrival_counts")], factory: metrics)
        self.rejectedRetention = rejectedRetention
        self.unverifiableRetention = unverifiableRetention
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        await PeriodicRounds.run {
            do {
                let (rejected, unverifiable) = try await round()
                if rejected + unverifiable > 0 {
                    logger.info("pruned what is kept only for a while", metadata: ["rejected_receipts": "\(rejected)", "unverifiable_postbacks": "\(unverifiable)"])
                }
            } catch {
                logger.error("cannot prune rejected receipts or unverifiable postbacks", metadata: ["error": "\(error)"])
            }
            return .seconds(interval)
        }
    }

    /// Prunes until nothing past its retention is left; returns how many receipts and postbacks were deleted.
    func round(now: Date = Date()) async throws -> (rejected: Int, unverifiable: Int) {
        let rejected = try await drain(prunedRejected) { [store] in
            try await store.retention.pruneRejected(receivedBefore: now.addingTimeInterval(-rejectedRetention), limit: Self.chunk)
        }
        let unverifiable = try await drain(prunedUnverifiable) { [store] in
            try await store.retention.pruneUnverifiable(receivedBefore: now.addingTimeInterval(-unverifiableRetention), limit: Self.chunk)
        }
        _ = try await drain(prunedArrivals) { [store] in
            try await store.arrivals.prune(rejectedBefore: now.addingTimeInterval(-rejectedRetention),
                                           unverifiableBefore: now.addingTimeInterval(-unverifiableRetention),
                                           verifiedBefore: now.addingTimeInterval(-Double(ArrivalLog.verifiedRetentionDays) * 86_400), limit: Self.chunk)
        }
        return (rejected, unverifiable)
    }

    private func drain(_ counter: Counter, _ prune: () async throws -> Int) async throws -> Int {
        var total = 0
        while !Task.isShuttingDownGracefully {
            let count = try await prune()
            total += count
            counter.increment(by: count)
            if count < Self.chunk { break }
        }
        return total
    }
}
