import Foundation
import Synchronization

/// The arrival counts of committed batches not yet written (``ArrivalLog``): taken whole, with the batch's transaction
/// once a second or by ``ArrivalLog/flush()``, and given back if that transaction fails.
public final class ArrivalTally: Sendable {
    /// Counts by row key, with the latest arrival.
    struct Counts {
        var entries: [ArrivalLog.Key: (arrivals: Int, last: String)] = [:]

        mutating func add(_ key: ArrivalLog.Key, arrivals: Int, last: String) {
            let entry = entries[key] ?? (0, last)
            entries[key] = (entry.arrivals + arrivals, max(entry.last, last))
        }

        mutating func add(_ other: Counts) {
            for (key, entry) in other.entries { add(key, arrivals: entry.arrivals, last: entry.last) }
        }
    }

    /// The longest counts wait before the next batch's transaction writes them.
    static let interval: TimeInterval = 1
    /// Keys held before they are written whatever the time.
    static let maximumKeys = 5_000

    private let state = Mutex<(counts: Counts, since: Date?)>((Counts(), nil))

    /// An empty tally.
    init() {}

    /// Adds a committed batch's counts.
    func add(_ counts: Counts) {
        guard !counts.entries.isEmpty else { return }
        state.withLock { state in
            state.counts.add(counts)
            if state.since == nil { state.since = Date() }
        }
    }

    /// Takes every count when they have waited ``interval`` or grown past ``maximumKeys``; nil otherwise.
    func takeIfDue(now: Date = Date()) -> Counts? {
        state.withLock { state in
            guard let since = state.since, now.timeIntervalSince(since) >= Self.interval || state.counts.entries.count >= Self.maximumKeys else { return nil }
            defer { state = (Counts(), nil) }
            return state.counts
        }
    }

    /// Takes every count; nil when there is none.
    func take() -> Counts? {
        state.withLock { state in
            guard state.since != nil else { return nil }
            defer { state = (Counts(), nil) }
            return state.counts
        }
    }

    /// Puts back counts whose transaction failed.
    func giveBack(_ counts: Counts) {
        add(counts)
    }

    /// The counts waiting, left in place.
    func snapshot() -> Counts { state.withLock { $0.counts } }

    /// Whether counts wait to be written.
    var hasPending: Bool { state.withLock { $0.since != nil } }
}
