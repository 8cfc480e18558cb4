import Foundation
import Metrics
import Synchronization

/// Records the deliveries partners accepted in shared transactions (group commit), one partner's at a time, so a
/// receiver's deliveries cost a transaction each only when they arrive one at a time.
///
/// Each partner has a lane. The first answer to arrive while its lane records nothing leads: it records itself and
/// every answer for that partner that arrived before it started, in one ``ForwardingOutbox/delivered(_:now:)``. Answers
/// that arrive meanwhile wait; when the transaction ends, the first of them leads the next one, and the others wait for
/// it. No task, thread or timer of its own: a lone answer is recorded at once, and under load each transaction takes
/// every answer the last one kept waiting. Every caller is answered only after the transaction holding its delivery
/// committed (or with the error that ended it; the entry's claim then lapses and it is delivered again with the same
/// idempotency key). A partner's lane touches only its own rule's row, so a partner whose row is busy (another
/// receiver's claim, an operator's change) delays no other partner's records.
///
/// Why: each delivery's own transaction held its rule's row until it committed, so on PostgreSQL a partner's
/// deliveries were recorded one commit after another.
public final class DeliveryRecorder: Sendable {
    private let outbox: ForwardingOutbox
    private let state = Mutex(State())
    private let batchSize: Recorder
    private let queueDepth: Gauge

    /// Each partner's lane while it records, and the answers waiting in all of them.
    private struct State {
        var lanes: [String: Lane] = [:]
        var waiting = 0
    }

    /// The answers for one partner waiting for its next transaction (one records while the lane exists).
    private struct Lane {
        var waiting: [(delivery: ForwardDelivery, continuation: CheckedContinuation<Turn, any Error>)] = []
    }

    /// What a waiting answer is told: recorded (or not, its claim having lapsed), or to lead the next transaction.
    private enum Turn {
        case recorded(Bool)
        case lead
    }

    /// The transaction returned another number of outcomes than it was given deliveries.
    struct OutcomesMismatch: Error {}

    /// Records into `outbox`, with its batch sizes (`countersign_forward_record_batch_size`) and the answers waiting
    /// (`countersign_forward_record_queue_depth`) in `metrics`.
    public init(outbox: ForwardingOutbox, metrics: any MetricsFactory) {
        self.outbox = outbox
        batchSize = Recorder(label: "countersign_forward_record_batch_size", factory: metrics)
        queueDepth = Gauge(label: "countersign_forward_record_queue_depth", factory: metrics)
    }

    /// Records `delivery` as accepted by its partner; returns false when its claim had lapsed (another attempt holds or
    /// finished the entry).
    public func delivered(_ delivery: ForwardDelivery) async throws -> Bool {
        let partner = delivery.partner
        let turn = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Turn, any Error>) in
            let depth: Int? = state.withLock { state in
                guard state.lanes[partner] != nil else {
                    state.lanes[partner] = Lane()
                    return nil
                }
                state.lanes[partner]!.waiting.append((delivery, continuation))
                state.waiting += 1
                return state.waiting
            }
            if let depth { queueDepth.record(depth) } else { continuation.resume(returning: .lead) }
        }
        if case .recorded(let done) = turn { return done }
        let (others, depth) = state.withLock { state in
            defer { state.lanes[partner]!.waiting.removeAll(keepingCapacity: true) }
            let others = state.lanes[partner]!.waiting
            state.waiting -= others.count
            return (others, state.waiting)
        }
        queueDepth.record(depth)
        batchSize.record(others.count + 1)
        var outcome: Result<[Bool], any Error>
        do { outcome = .success(try await outbox.delivered([delivery] + others.map(\.delivery))) } catch { outcome = .failure(error) }
        if case .success(let recorded) = outcome, recorded.count != others.count + 1 { outcome = .failure(OutcomesMismatch()) }
        // The next leader first, so the next transaction starts before this one's callers are answered.
        let next: CheckedContinuation<Turn, any Error>? = state.withLock { state in
            guard let first = state.lanes[partner]!.waiting.first else {
                state.lanes[partner] = nil
                return nil
            }
            state.lanes[partner]!.waiting.removeFirst()
            state.waiting -= 1
            return first.continuation
        }
        next?.resume(returning: .lead)
        switch outcome {
        case .success(let recorded):
            for (other, done) in zip(others, recorded.dropFirst()) { other.continuation.resume(returning: .recorded(done)) }
            return recorded[0]
        case .failure(let error):
            for other in others { other.continuation.resume(throwing: error) }
            throw error
        }
    }
}
