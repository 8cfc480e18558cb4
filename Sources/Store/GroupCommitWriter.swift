import Foundation
import Metrics
import Postback

/// Gathers intakes from concurrent requests and commits them together.
///
/// A commit starts as soon as the writer is free; while it runs, the next batch gathers by itself.
/// Every caller is resumed only after the transaction holding its intake has committed, or with the
/// error that made it fail, so nothing is acknowledged before it is durable.
public actor GroupCommitWriter {
    private let store: PostbackStore
    private var pending: [(intake: Intake, continuation: CheckedContinuation<Disposition, any Error>)] = []
    private var committing = false
    private let batchSize = Recorder(label: "countersign_commit_batch_size")
    private let commitTime = Metrics.Timer(label: "countersign_commit_seconds", preferredDisplayUnit: .seconds)
    private let queueDepth = Gauge(label: "countersign_commit_queue_depth")

    /// Creates a writer over `store`.
    public init(store: PostbackStore) {
        self.store = store
    }

    /// Persists `intake` in the next commit and returns what storing it did.
    public func submit(_ intake: Intake) async throws -> Disposition {
        try await withCheckedThrowingContinuation { continuation in
            pending.append((intake, continuation))
            queueDepth.record(pending.count)
            if !committing {
                committing = true
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while !pending.isEmpty {
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            batchSize.record(batch.count)
            let started = DispatchTime.now().uptimeNanoseconds
            let outcome: Result<[Disposition], any Error>
            do {
                outcome = .success(try await store.persist(batch.map(\.intake)))
            } catch {
                outcome = .failure(error)
            }
            commitTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
            switch outcome {
            case .success(let dispositions):
                for (entry, disposition) in zip(batch, dispositions) { entry.continuation.resume(returning: disposition) }
            case .failure(let error):
                for entry in batch { entry.continuation.resume(throwing: error) }
            }
        }
        queueDepth.record(0)
        committing = false
    }
}
