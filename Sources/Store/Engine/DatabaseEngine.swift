import NIOCore
import NIOPosix

/// A database the store runs on: SQLite (embedded, one process) or PostgreSQL (shared by several receivers).
///
/// Both entry points block the calling thread until the database answers, so the store's rules can be written once as
/// plain synchronous code over ``SQLSession`` and run unchanged on either engine. Async callers go through
/// ``write(_:)`` and ``read(_:)``, which run the work on the store's bounded thread pool (``Blocking``), never on Swift's
/// cooperative pool.
public protocol DatabaseEngine: Sendable {
    /// Which SQL the engine speaks.
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction and commits it; rolls back and rethrows if `body` throws. Blocks the caller.
    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Runs `body` with no transaction around it: each statement commits on its own as it runs (PostgreSQL's
    /// `ingest_batch` procedure commits inside its one statement). Blocks the caller.
    func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Runs `body` against a consistent read snapshot. Blocks the caller.
    func snapshot<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Runs one read query built for one call (a page of an export) and hands each row to `row` as it is read, its cells lent
    /// for the call, folding them into `state`, which it returns. SQLite steps its statement on the store's thread pool
    /// (``Blocking``); PostgreSQL reads postgres-nio's row sequence as the rows arrive, on a connection leased for the
    /// query alone. Neither makes a value of a row. `reuse` is ``StatementReuse/once`` for text built for the call;
    /// ``StatementReuse/cached`` for one of a bounded set of the store's own statements, which SQLite keeps compiled.
    func readRows<State: Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse, into state: State,
                                   _ row: @escaping @Sendable (inout State, SQLCells) throws -> Void) async throws -> State
    /// A lane of transactions for one long-lived thread (a commit thread): PostgreSQL keeps its connection between
    /// them instead of leasing one for each.
    func lane() -> any TransactionLane
    /// Runs what the engine needs while the store is open (PostgreSQL's pool of connections) until ``close()`` or the
    /// task's cancellation; nothing reaches PostgreSQL before it runs.
    func run() async
    /// Ends ``run()``: PostgreSQL closes its connections now, SQLite when the engine is released.
    func close()
}

/// Transactions run one after another by one thread (``DatabaseEngine/lane()``).
public protocol TransactionLane: AnyObject {
    /// Runs `body` in one transaction, as ``DatabaseEngine/transaction(_:)`` does.
    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Runs `body` with no transaction around it, as ``DatabaseEngine/autocommit(_:)`` does.
    func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Gives back what the lane holds while its thread waits for work (a held connection is not kept alive).
    func idle()
    /// Gives back what the lane holds.
    func close()
}

/// A lane that is the engine's own transactions (SQLite: one writer connection, nothing to hold).
final class EngineLane: TransactionLane {
    let engine: any DatabaseEngine

    init(engine: any DatabaseEngine) {
        self.engine = engine
    }

    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T { try engine.transaction(body) }
    func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T { try engine.autocommit(body) }
    func idle() {}
    func close() {}
}

/// How background work (a schema's backlog, a spend import's staging) shares the one writer with ingest: small
/// transactions, and after each a pause of ``idleRatio`` times what it took (waiting for the writer included), so the
/// work holds at most 1 / (1 + ``idleRatio``) of the writer's time and ingest waits behind at most one transaction.
public struct WritePace: Sendable {
    /// Rows written in one transaction.
    public var batch: Int
    /// The pause after a transaction, as a multiple of its time.
    public var idleRatio: Double

    /// A pace.
    public init(batch: Int, idleRatio: Double) {
        self.batch = batch
        self.idleRatio = idleRatio
    }
}

extension DatabaseEngine {
    /// ``write(_:)`` at `pace`: the transaction, then the pause it earned.
    @discardableResult
    public func pacedWrite<T: Sendable>(_ pace: WritePace, _ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await write(body)
        if pace.idleRatio > 0 { try await Task.sleep(for: (clock.now - started) * pace.idleRatio) }
        return result
    }

    /// ``transaction(_:)`` for async callers.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await Blocking.run { try self.transaction(body) }
    }

    /// ``snapshot(_:)`` for async callers.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await Blocking.run { try self.snapshot(body) }
    }
}

/// Runs blocking database work on a bounded pool of threads (NIO's `NIOThreadPool`), so it never holds one of the
/// cooperative pool's few threads and never grows the process's threads without bound.
///
/// At most ``threads`` store operations run at once in a process; more wait in the pool's queue, without a thread. That
/// covers SQLite's readers and PostgreSQL's default pool of 10 connections with room to spare; the commit thread of
/// ``GroupCommitWriter`` is its own. The pool starts with the first operation and lives as long as the process.
package enum Blocking {
    /// The most store operations that run at once.
    static let threads = 32

    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
        return pool
    }()

    /// Runs `work` on the pool and returns its result. Work once asked for runs to its end even if the asking task is
    /// cancelled (a transaction is never half-asked), as a service's last write at shutdown must.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any(), work).get()
    }
}
