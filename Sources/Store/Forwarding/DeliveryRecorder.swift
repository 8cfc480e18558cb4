import Foundation
import Metrics
import Synchronization

/// Records the deliveries partners accepted in shared transactions (group commit), so a receiver's deliveries cost a
/// transaction each only when they arrive one at a time.
///
/// The first answer to arrive while no transaction is recording leads: it records itself and every answer that arrived
/// before it started, in one ``ForwardingOutbox/delivered(_:now:)``. Answers that arrive meanwhile wait; when the
/// transaction ends, the first of them leads the next one, and the others wait for it. No task, thread or timer of its
/// own: a lone answer is recorded at once, and under load each transaction takes every answer the last one kept waiting.
/// Every caller is answered only after the transaction holding its delivery committed (or with the error that ended it,
/// and the entry's claim then lapses and it is delivered again with the same idempotency key).
///
/// One transaction a partner's row is updated in at a time per receiver: each delivery's own transaction held the
/// rule's row until its commit, so PostgreSQL recorded a partner's deliveries one durable commit after another.
public final class DeliveryRecorder: Sendable {
    private let outbox: ForwardingOutbox
    private let state = Mutex(State())
    private let batchSize: Recorder
    private let queueDepth: Gauge

    /// Answers waiting for the next transaction, and whether one is recording.
    private struct State {
        var waiting: [(delivery: ForwardDelivery, continuation: CheckedContinuation<Turn, any Error>)] = []
        var recording = false
    }

    /// What a waiting answer is told: recorded (or not, its claim having lapsed), or to lead the next transaction.
    private enum Turn {
        case recorded(Bool)
        case lead
    }

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
        let turn = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Turn, any Error>) in
            let depth: Int? = state.withLock { state in
                guard state.recording else {
                    state.recording = true
                    return nil
                }
                state.waiting.append((delivery, continuation))
                return state.waiting.count
            }
            if let depth { queueDepth.record(depth) } else { continuation.resume(returning: .lead) }
        }
        if case .recorded(let done) = turn { return done }
        let others = state.withLock { state in
            defer { state.waiting.removeAll(keepingCapacity: true) }
            return state.waiting
        }
        batchSize.record(others.count + 1)
        let outcome: Result<[Bool], any Error>
        do { outcome = .success(try await outbox.delivered([delivery] + others.map(\.delivery))) } catch { outcome = .failure(error) }
        // The next leader first, so the next transaction starts before this one's callers are answered.
        let next: CheckedContinuation<Turn, any Error>? = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.recording = false
                return nil
            }
            return state.waiting.removeFirst().continuation
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
