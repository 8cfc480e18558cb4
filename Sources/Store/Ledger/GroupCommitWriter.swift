import Foundation
import Metrics
import Postback
import ServiceLifecycle
import Synchronization

/// Gathers intakes from concurrent requests and commits them together.
///
/// A commit starts as soon as the writer is free; while it runs, the next batch gathers by itself.
/// Every caller is resumed only after the transaction holding its intake has committed, or with the
/// error that made it fail, so nothing is acknowledged before it is durable. On PostgreSQL a batch can be stored in part
/// (``PostbackLedger/PartlyStored``): the callers whose intakes were committed get their disposition, the others the error.
///
/// Every ``foldEvery(_:)`` stored postbacks, and when it starts and stops, new rows are folded into the report rollup
/// (``ReportRollup/fold(limit:)``): on SQLite by the commit thread itself (SQLite has one writer, so a fold elsewhere
/// would only wait for it), on PostgreSQL on a queue of its own, so commits go on while a fold runs.
///
/// The commit loop runs on its own thread rather than on Swift's cooperative pool: under load that pool
/// is busy verifying signatures, and a commit loop queued behind that work would leave SQLite idle. SQLite has one
/// writer, so one thread commits. PostgreSQL could commit several transactions at once, but one thread commits there
/// too: a batch without copies is one round trip, the next batch gathers while it waits, and two backends writing the
/// same tables at once cost more CPU a postback than one (two commit threads, alternated with one in four pairs of
/// `scripts/bench-ingest` runs, took 3,328 postbacks a second on average against 3,782). The price: whatever a batch waits
/// for (a copy's row held by a fold, a schema upload's lock, a connection that stopped answering, up to the statement
/// timeout) holds every batch behind it on that receiver.
///
/// A swift-service-lifecycle `Service`: ``run()`` starts the commit thread and, on graceful shutdown (or cancellation),
/// commits what is pending, folds the rollup and ends the thread before it returns. A service group shuts services
/// down in reverse order, so listed before the HTTP server it stops after the server has drained its requests.
public final class GroupCommitWriter: Service, @unchecked Sendable {
    private let database: StoreDatabase
    // Guarded by `condition`.
    private var pending: [(intake: Intake, continuation: CheckedContinuation<Disposition, any Error>)] = []
    private var stopping = false
    private let condition = NSCondition()
    /// Signalled by the commit thread as it ends.
    private let ended = DispatchSemaphore(value: 0)
    private let batchSize: Recorder
    private let commitTime: Metrics.Timer
    private let queueDepth: Gauge
    private let foldTime: Metrics.Timer
    private let foldFailures: Counter
    private let commitFailures: Counter
    private let lastCommitSucceeded = Atomic<Bool>(true)
    /// PostgreSQL's folds, one at a time; a fold asked for while one waits is the same fold.
    private let folds = DispatchQueue(label: "countersign-rollup-fold", qos: .utility)
    private let foldQueued = Atomic<Bool>(false)
    /// Stored postbacks between two folds into the report rollup. A fold costs about 7 µs a row against about 40 µs
    /// for the per-row trigger it replaced. On SQLite the commit thread folds, and every request that arrives meanwhile
    /// waits: folds of 128 held it about 3 ms and made p99 at half the maximum rate 6.9 ms, folds of 32 about 1 ms
    /// (p99 5.1 ms) at no measurable cost in rate (docs/performance.md). PostgreSQL folds on its own queue while commits
    /// go on, and a fold is a transaction of round trips: 128.
    static func foldEvery(_ dialect: SQLDialect) -> Int { dialect == .sqlite ? 32 : 128 }
    /// Seconds the commit thread waits for work before its lane gives its connection back.
    static let laneIdleGrace = 1.0

    /// Creates a writer over `database` that records its metrics (batch sizes, commit and fold times, queue depth,
    /// failures) with `metrics`; nothing runs until ``run()``.
    public init(database: StoreDatabase, metrics: any MetricsFactory) {
        self.database = database
        batchSize = Recorder(label: "countersign_commit_batch_size", factory: metrics)
        commitTime = Metrics.Timer(label: "countersign_commit_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: metrics)
        queueDepth = Gauge(label: "countersign_commit_queue_depth", factory: metrics)
        foldTime = Metrics.Timer(label: "countersign_rollup_fold_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: metrics)
        foldFailures = Counter(label: "countersign_rollup_fold_failures_total", factory: metrics)
        commitFailures = Counter(label: "countersign_commit_failures_total", factory: metrics)
    }

    /// Runs the commit thread until graceful shutdown or cancellation, then commits what is pending and returns once
    /// the thread has ended. Submissions made before it starts wait for the first commit.
    public func run() async throws {
        let thread = Thread { [self] in
            // Named by the thread itself, in at most 15 bytes (Linux's limit): `top -H` and `perf` show it.
            // Foundation's `Thread.name` applies a name only once the starting thread has recorded the new thread's
            // handle, a race the new thread often won: the commit thread then kept the dispatch pool's name, and
            // `scripts/cpu-budget` counted its commits as request handling.
            try? "cs-commit".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            commitLoop()
            ended.signal()
        }
        thread.qualityOfService = .userInteractive
        thread.start()
        try? await gracefulShutdown()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread { [self] in
                self.stop()
                continuation.resume()
            }.start()
        }
    }

    /// False from a failed commit until the next one succeeds: readiness reflects whether writes work.
    public var isHealthy: Bool { lastCommitSucceeded.load(ordering: .relaxed) }

    /// Persists `intake` in the next commit and returns what storing it did. Its decoding is computed here, on the
    /// caller's task, with the schemas the catalogue holds; the commit keeps it unless the app's revision differs then.
    public func submit(_ intake: Intake) async throws -> Disposition {
        var intake = intake
        intake.decoding = intake.currentDecoding(database.ledger.catalog.snapshot())
        return try await withCheckedThrowingContinuation { continuation in
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

    /// Folds new postbacks into the report rollup, after the callers of the last commit were answered. A failed fold
    /// loses nothing: reports read the rows not yet folded, and the next fold takes them.
    private func fold() {
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            try database.rollup.fold()
            foldTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        } catch {
            foldFailures.increment()
        }
    }

    /// Commits what is pending, ends the commit thread, folds the rollup, and returns when all that is done.
    private func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
        ended.wait()
        flushArrivals()
        // The last fold runs after any queued one.
        folds.sync { fold() }
    }

    /// Writes the arrival counts waiting in memory (``ArrivalLog``). A failure loses nothing: they wait for the next
    /// batch, and the failing store shows in the commits too.
    private func flushArrivals() {
        try? database.arrivals.flush()
    }

    /// Folds now on SQLite; on PostgreSQL queues a fold unless one is queued already.
    private func requestFold() {
        guard database.engine.dialect == .postgres else { return fold() }
        guard foldQueued.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        folds.async { [self] in
            foldQueued.store(false, ordering: .releasing)
            fold()
        }
    }

    /// Commits batches until stopped, having folded the rollup before the first.
    private func commitLoop() {
        fold()
        let lane = database.engine.lane()
        defer { lane.close() }
        var storedSinceFold = 0
        while true {
            condition.lock()
            // Through a short pause the lane keeps its connection: taking one again costs a task on the cooperative
            // pool, which under load waits behind every request's verification (at a fixed rate of half the maximum,
            // leasing a connection for each batch made PostgreSQL's answers take seconds). Waiting longer, it gives the
            // connection back: an idle one may be dropped by the network.
            let keepUntil = Date().addingTimeInterval(Self.laneIdleGrace)
            while pending.isEmpty, !stopping, condition.wait(until: keepUntil) {}
            if pending.isEmpty, !stopping {
                condition.unlock()
                lane.idle()
                condition.lock()
            }
            while pending.isEmpty, !stopping {
                // Idle with arrival counts waiting: write them after a second without a batch.
                guard database.arrivals.hasPending else { condition.wait(); continue }
                if !condition.wait(until: Date().addingTimeInterval(ArrivalTally.interval)), pending.isEmpty, !stopping {
                    condition.unlock()
                    flushArrivals()
                    condition.lock()
                }
            }
            if pending.isEmpty, stopping {
                condition.unlock()
                return
            }
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            condition.unlock()
            batchSize.record(batch.count)
            let started = DispatchTime.now().uptimeNanoseconds
            let outcome = Result { try database.ledger.persist(batch.map(\.intake), through: lane) }
            commitTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
            switch outcome {
            case .success(let dispositions):
                lastCommitSucceeded.store(true, ordering: .relaxed)
                for (entry, disposition) in zip(batch, dispositions) { entry.continuation.resume(returning: disposition) }
                storedSinceFold += dispositions.count { $0 == .stored }
            case .failure(let error as PostbackLedger.PartlyStored):
                lastCommitSucceeded.store(false, ordering: .relaxed)
                commitFailures.increment()
                for (entry, disposition) in zip(batch, error.dispositions) {
                    if let disposition { entry.continuation.resume(returning: disposition) } else { entry.continuation.resume(throwing: error.error) }
                }
                storedSinceFold += error.dispositions.count { $0 == .stored }
            case .failure(let error):
                lastCommitSucceeded.store(false, ordering: .relaxed)
                commitFailures.increment()
                for entry in batch { entry.continuation.resume(throwing: error) }
            }
            if storedSinceFold >= Self.foldEvery(database.engine.dialect) {
                requestFold()
                storedSinceFold = 0
            }
        }
    }
}
