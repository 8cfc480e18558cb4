import Foundation
import Metrics
import Postback

/// Gathers intakes from concurrent requests and commits them together.
///
/// A commit starts as soon as the writer is free; while it runs, the next batch gathers by itself.
/// Every caller is resumed only after the transaction holding its intake has committed, or with the
/// error that made it fail, so nothing is acknowledged before it is durable.
///
/// The commit loop runs on its own thread rather than on Swift's cooperative pool: under load that pool
/// is busy verifying signatures, and a commit loop queued behind that work would leave SQLite idle.
public final class GroupCommitWriter: @unchecked Sendable {
    private let store: PostbackStore
    // Guarded by `condition`.
    private var pending: [(intake: Intake, continuation: CheckedContinuation<Disposition, any Error>)] = []
    private var stopping = false
    private let condition = NSCondition()
    private let batchSize = Recorder(label: "countersign_commit_batch_size")
    private let commitTime = Metrics.Timer(label: "countersign_commit_seconds", preferredDisplayUnit: .seconds)
    private let queueDepth = Gauge(label: "countersign_commit_queue_depth")

    /// Creates a writer over `store` and starts its commit thread; call ``stop()`` when done.
    public init(store: PostbackStore) {
        self.store = store
        let thread = Thread { [self] in self.run() }
        thread.name = "countersign-commit"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Persists `intake` in the next commit and returns what storing it did.
    public func submit(_ intake: Intake) async throws -> Disposition {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            guard !stopping else {
                condition.unlock()
                continuation.resume(throwing: CancellationError())
                return
            }
            pending.append((intake, continuation))
            let depth = pending.count
            condition.signal()
            condition.unlock()
            queueDepth.record(depth)
        }
    }

    /// Commits what is pending, then ends the commit thread.
    public func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty, !stopping { condition.wait() }
            if pending.isEmpty, stopping {
                condition.unlock()
                return
            }
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            condition.unlock()
            batchSize.record(batch.count)
            let started = DispatchTime.now().uptimeNanoseconds
            let outcome = Result { try store.persistNow(batch.map(\.intake)) }
            commitTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
            switch outcome {
            case .success(let dispositions):
                for (entry, disposition) in zip(batch, dispositions) { entry.continuation.resume(returning: disposition) }
            case .failure(let error):
                for entry in batch { entry.continuation.resume(throwing: error) }
            }
        }
    }
}
