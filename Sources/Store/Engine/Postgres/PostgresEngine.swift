import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The shared engine: a PostgreSQL database that several receivers use at once, through postgres-nio's own pool
/// (`PostgresClient`), which ``run()`` runs for as long as the store is open.
///
/// The store's rules are synchronous (``DatabaseEngine``; docs/architecture.md says why), so a transaction runs on a
/// thread that may block: ``Blocking``'s pool or a commit thread. It leases a connection from the client (a lease
/// handed from the client's async world to the waiting thread, ``ConnectionLease``), runs its statements through
/// PostgresNIO's `EventLoopFuture` API and waits for each answer, and gives the connection back. A connection that fails
/// is closed and the client opens another, so the engine recovers by itself when the server comes back.
final class PostgresEngine: DatabaseEngine, @unchecked Sendable {
    var dialect: SQLDialect { .postgres }
    /// postgres-nio's pool of connections; nothing is leased before ``run()`` runs it.
    let client: PostgresClient
    /// How migrations connect: one connection of their own, before the pool runs.
    private let migrationConfiguration: PostgresConnection.Configuration
    private let leaseTimeout: TimeInterval
    private let answerTimeout: TimeInterval
    /// The connections held, and whether PostgreSQL was last found unreachable.
    private let use: PoolUse
    private let logger: Logger
    private let stop = StopSignal()
    /// Fired as ``run()`` starts the client: a lease waits for it, since the client has no connection to give before.
    private let started = StopSignal()
    /// The state the engine keeps per pooled connection (prepared statements, the answer awaited), by connection.
    private let states = NIOLockedValueBox<[ObjectIdentifier: PooledConnection]>([:])

    /// Connects once to `location` and runs the PostgreSQL migrations (under an advisory lock, when several receivers
    /// start together), then `setUp` on the same connection. The server cancels a statement that runs longer than
    /// `statementTimeout`; a connection that gives no answer at all within ``answerGrace`` more is closed.
    init(location: PostgresLocation, maximumConnections: Int, connectTimeout: TimeInterval, statementTimeout: TimeInterval, logger: Logger,
         setUp: (any SQLSession) throws -> Void) throws {
        // Text arrives as UTF-8 whatever the database's encoding (the export copies it as it comes).
        let startup = [("statement_timeout", String(Int64(statementTimeout * 1000))), ("client_encoding", "UTF8")]
        var client: PostgresClient.Configuration
        var direct: PostgresConnection.Configuration
        if let socket = location.socketPath {
            client = .init(unixSocketPath: socket, username: location.user, password: location.password, database: location.database)
            direct = .init(unixSocketPath: socket, username: location.user, password: location.password, database: location.database)
        } else {
            client = .init(host: location.host, port: location.port, username: location.user, password: location.password,
                           database: location.database, tls: location.requireTLS ? .require(.makeClientConfiguration()) : .disable)
            direct = .init(host: location.host, port: location.port, username: location.user, password: location.password, database: location.database,
                           tls: location.requireTLS ? .require(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable)
        }
        client.options.maximumConnections = max(1, maximumConnections)
        client.options.minimumConnections = 0
        client.options.connectTimeout = .milliseconds(Int64(connectTimeout * 1000))
        client.options.additionalStartupParameters = startup
        direct.options.connectTimeout = .milliseconds(Int64(connectTimeout * 1000))
        direct.options.additionalStartupParameters = startup
        let background = Logger(label: logger.label) { _ in PoolLogFilter(wrapped: logger.handler) }
        self.client = PostgresClient(configuration: client, backgroundLogger: background)
        migrationConfiguration = direct
        use = PoolUse(maximumConnections: client.options.maximumConnections)
        leaseTimeout = max(connectTimeout, 1)
        answerTimeout = statementTimeout + Self.answerGrace
        self.logger = logger
        try withMigrationConnection { session in
            try PostgresMigrations.migrate(self, session)
            try setUp(session)
        }
    }

    /// Seconds to wait for the answer to `COMMIT` or `ROLLBACK`, which a live server gives in milliseconds, and
    /// for any other statement past the server's own `statement_timeout`. A connection to a server that stopped or
    /// restarted can leave a statement unanswered, and the thread waiting for ever; past this the connection is closed
    /// and the batch fails (500, so devices retry), and the next batch reconnects.
    static let answerGrace: TimeInterval = 5

    /// Runs the client's pool until ``close()``, or until the calling task is cancelled.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                self.started.fire()
                await self.client.run()
            }
            group.addTask { await self.stop.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Runs `body` in a transaction. One that PostgreSQL undid whole for a deadlock or a serialization failure, or
    /// whose connection closed before `BEGIN` was answered, runs again, up to three times: concurrent transactions can
    /// lock rows in opposite orders (a copy's rollup row outside the key order, ``CopyJudgement``), and PostgreSQL then
    /// aborts one of them. `BEGIN` is sent ahead of the first statement (``PostgresSession/rowsAhead(_:_:reuse:)``): the
    /// connection answers in order, so the thread waits once for both.
    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try transaction(body, on: withConnection)
    }

    /// ``transaction(_:)`` on the sessions `connected` gives.
    func transaction<T>(_ body: (any SQLSession) throws -> T, on connected: ((PostgresSession) throws -> T) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            try Self.withRetries(when: { Self.askedToRetry($0) || Self.lostBeforeBegin($0) }) {
                try connected { session in
                    // Its answer is checked with the first statement's: one wait a transaction less.
                    _ = try session.rowsAhead("BEGIN", [], reuse: .once)
                    do {
                        let result = try body(session)
                        // A transaction a failed statement aborted ends with the tag `ROLLBACK`, not an error.
                        let committed = try session.run("COMMIT", [], answerWithin: Self.answerGrace)
                        guard committed.metadata.command == "COMMIT" else { throw PostgresEngineError.rolledBack }
                        return result
                    } catch {
                        if !(error is PostgresEngineError), !session.pooled.connection.isClosed {
                            _ = try? session.run("ROLLBACK", [], answerWithin: Self.answerGrace)
                        }
                        throw error
                    }
                }
            }
        }
    }

    /// Runs `body` on a leased connection outside a transaction. A statement PostgreSQL undid for a deadlock or a
    /// serialization failure runs again, as in ``transaction(_:)``; one whose connection closed does not: it may have
    /// committed.
    func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try autocommit(body, on: withConnection)
    }

    /// ``autocommit(_:)`` on the sessions `connected` gives.
    func autocommit<T>(_ body: (any SQLSession) throws -> T, on connected: ((PostgresSession) throws -> T) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            try Self.withRetries(when: Self.askedToRetry) { try connected { session in try body(session) } }
        }
    }

    /// Runs `run`, and again while it fails with an error `retry` accepts, three times in all.
    private static func withRetries<T>(when retry: (any Error) -> Bool, _ run: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try run()
            } catch where attempt < 3 && retry(error) {
                attempt += 1
            }
        }
    }

    /// A lane that keeps one leased connection between its transactions, for a commit thread; with fewer than four
    /// connections (sized when PostgreSQL had two commit threads, and kept: three left for reports, folds and
    /// readiness) the commit thread leases per transaction, so those still get one.
    func lane() -> any TransactionLane { use.maximumConnections >= 4 ? PostgresLane(engine: self) : EngineLane(engine: self) }

    /// The connection closed before the server answered `BEGIN`: nothing ran, so the transaction can run on another
    /// connection. (The pool can hand out a connection the server has just ended, before it sees the close.)
    static func lostBeforeBegin(_ error: any Error) -> Bool {
        if case .connectionLost("BEGIN") = error as? PostgresEngineError { true } else { false }
    }

    /// A deadlock (40P01) or serialization failure (40001): the server rolled the transaction back and asks for it again.
    static func askedToRetry(_ error: any Error) -> Bool {
        let state = serverState(of: error)
        return state == "40P01" || state == "40001"
    }

    /// The SQLSTATE of an error the server reported, nil for any other failure. PostgresNIO reports a prepared
    /// statement's (``StatementReuse/prepared``) server errors as `PostgresError`, any other statement's as `PSQLError`.
    static func serverState(of error: any Error) -> String? {
        if let error = error as? PSQLError { return error.code == .server ? error.serverInfo?[.sqlState] : nil }
        if case .server(let message)? = error as? PostgresError { return message.fields[.sqlState] }
        return nil
    }

    func snapshot<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try withConnection { session in
            _ = try session.rowsAhead("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [], reuse: .once)
            defer { _ = try? session.run("ROLLBACK", []) }
            return try body(session)
        }
    }

    /// Reads the rows of `sql` as postgres-nio's row sequence delivers them (it reads ahead a bounded number of rows and
    /// waits for the reader), on a connection leased for this query alone: the store's blocking threads take no part.
    /// The lease and the whole read must end within the engine's limits (the lease wait, shorter while PostgreSQL is
    /// unreachable, ``PoolUse``; then the server's `statement_timeout` and ``answerGrace``): past them, or when the
    /// calling task is cancelled, a leased connection is closed, which ends the query with an error, and the client
    /// opens another; a lease not yet given is given up.
    /// A statement whose connection ended before the server answered it runs again on another connection (up to three
    /// times): `sql` must be a read.
    func readRows<State: Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse, into state: State,
                                   _ row: @escaping @Sendable (inout State, SQLCells) throws -> Void) async throws -> State {
        if stop.isFired { throw PostgresEngineError.closed }
        await started.wait()
        if stop.isFired { throw PostgresEngineError.closed }
        let query = PostgresSession.query(sql, arguments)
        let (client, logger, use, answerTimeout) = (self.client, self.logger, self.use, self.answerTimeout)
        let (leaseWait, givenBefore) = use.waiting(normally: leaseTimeout)
        let leased = NIOLockedValueBox<PostgresConnection?>(nil)
        // Whether the client gave a connection at all, and whether the time ran out waiting for one.
        let given = NIOLockedValueBox(false), ranOutLeasing = NIOLockedValueBox(false)
        return try await withThrowingTaskGroup(of: State?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    // A connection the server had ended before the query was sent (the pool can hand one out before
                    // it sees the close) is given up and the read runs on another, as a transaction's `BEGIN` does.
                    var attempt = 1
                    while true {
                        do {
                            return try await client.withConnection { connection in try await use.holding {
                                leased.withLockedValue { $0 = connection }
                                given.withLockedValue { $0 = true }
                                do {
                                    var state = state
                                    var count: Int?
                                    for try await next in try await self.state(of: connection).rows(of: query, sql: sql, logger: logger) {
                                        if count == nil { count = try PostgresSession.checkReadable(next) }
                                        try row(&state, SQLCells(postgres: next, count: count!))
                                    }
                                    leased.withLockedValue { $0 = nil }
                                    return state
                                } catch {
                                    // A connection that failed other than by the server's answer (closed at the
                                    // deadline or on cancellation, lost, or left mid-query by the reader's own error)
                                    // goes back only once closed: the pool must not hand it out again.
                                    if PostgresEngine.serverState(of: error) == nil {
                                        connection.close().whenComplete { _ in }
                                        try? await connection.closeFuture.get()
                                    }
                                    throw error
                                }
                            } }
                        } catch PostgresEngineError.connectionLost(let lost) where lost == sql && attempt < 3 && !Task.isCancelled {
                            leased.withLockedValue { $0 = nil }
                            attempt += 1
                        }
                    }
                } onCancel: {
                    // postgres-nio waits for a query's first answer without heeding cancellation: the close ends it.
                    if let connection = leased.withLockedValue({ $0 }) { connection.close().whenComplete { _ in } }
                }
            }
            group.addTask {
                // The wait for a connection, then for the query from there.
                try await Task.sleep(for: .seconds(leaseWait))
                guard given.withLockedValue({ $0 }) else {
                    ranOutLeasing.withLockedValue { $0 = true }
                    return nil
                }
                try await Task.sleep(for: .seconds(answerTimeout))
                return nil
            }
            defer { group.cancelAll() }
            guard case let state?? = try await group.next() else {
                // The time ran out: cancelling the read (the deferred `cancelAll`) closes its connection.
                throw ranOutLeasing.withLockedValue { $0 } ? use.gaveNothing(within: leaseWait, since: givenBefore)
                    : PostgresEngineError.noAnswer(sql, leaseWait + answerTimeout)
            }
            return state
        }
    }

    /// Runs `text`, several statements without arguments (migrations), one statement at a time: the extended query
    /// protocol takes one statement per message.
    func runScript(_ text: String, on session: PostgresSession) throws {
        for statement in Placeholders.statements(text) { try session.run(statement, []) }
    }

    /// Ends ``run()``: the client closes its connections, and later transactions fail with ``PostgresEngineError/closed``.
    func close() {
        stop.fire()
        started.fire()
    }

    /// Runs `body` on a connection of its own, opened for it and closed after, with no limit on a statement's answer
    /// (migrations may rewrite a table): the pool is not running yet when the store opens.
    private func withMigrationConnection<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        let connection = try PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: migrationConfiguration,
                                                        id: 0, logger: logger).wait()
        defer { connection.close().whenComplete { _ in withExtendedLifetime(connection) {} } }
        return try body(PostgresSession(pooled: PooledConnection(connection), logger: logger, answerTimeout: nil))
    }

    /// Leases a connection for `body`; a connection that saw an error it cannot vouch for is closed, not given back for
    /// reuse. Each statement must be answered within the engine's limit.
    func withConnection<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        let lease = try newLease()
        defer { lease.release() }
        return try session(on: lease, body)
    }

    /// A connection leased from the client.
    func newLease() throws -> ConnectionLease {
        if stop.isFired { throw PostgresEngineError.closed }
        return try ConnectionLease(client: client, started: started, within: leaseTimeout, use: use)
    }

    /// Runs `body` on the leased connection; closes the connection after an error it cannot vouch for.
    func session<T>(on lease: ConnectionLease, _ body: (PostgresSession) throws -> T) throws -> T {
        let session = PostgresSession(pooled: state(of: lease.connection), logger: logger, answerTimeout: answerTimeout)
        do {
            return try body(session)
        } catch {
            // The store's own errors and the server's (a constraint, say) leave a healthy connection after ROLLBACK, as
            // does a COMMIT answered by rolling back; a connection or protocol failure may not. An unanswered statement
            // closed its connection already.
            let healthy = switch error {
            case is PSQLError, is PostgresError: Self.serverState(of: error) != nil
            case PostgresEngineError.rolledBack: true
            case is PostgresEngineError: false
            default: true
            }
            // Closed, and the close finished, before the lease is given back: the pool must not hand it out again.
            if !healthy { try? lease.connection.close().wait() }
            throw error
        }
    }

    /// The engine's state for `connection`, made the first time it is leased and dropped when it closes.
    private func state(of connection: PostgresConnection) -> PooledConnection {
        let key = ObjectIdentifier(connection)
        if let known = states.withLockedValue({ $0[key] }) { return known }
        let pooled = PooledConnection(connection)
        states.withLockedValue { $0[key] = pooled }
        connection.closeFuture.whenComplete { [states] _ in states.withLockedValue { _ = $0.removeValue(forKey: key) } }
        return pooled
    }
}
