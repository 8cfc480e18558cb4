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
    private let maximumConnections: Int
    private let logger: Logger
    private let stop = StopSignal()
    /// Fired as ``run()`` starts the client, which warns of a lease asked for before.
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
        self.client = PostgresClient(configuration: client, backgroundLogger: logger)
        migrationConfiguration = direct
        self.maximumConnections = client.options.maximumConnections
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
    func lane() -> any TransactionLane { maximumConnections >= 4 ? PostgresLane(engine: self) : EngineLane(engine: self) }

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
    /// The lease and the whole read must end within the engine's limits (the lease wait, then the server's
    /// `statement_timeout` and ``answerGrace``): past them, or when the calling task is cancelled, a leased connection is
    /// closed, which ends the query with an error, and the client opens another; a lease not yet given is given up.
    func readRows<State: Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible], into state: State,
                                   _ row: @escaping @Sendable (inout State, SQLCells) throws -> Void) async throws -> State {
        if stop.isFired { throw PostgresEngineError.closed }
        await started.wait()
        if stop.isFired { throw PostgresEngineError.closed }
        let query = PostgresSession.query(sql, arguments)
        let (client, logger, limit, maximumConnections) = (self.client, self.logger, leaseTimeout + answerTimeout, self.maximumConnections)
        let leased = NIOLockedValueBox<PostgresConnection?>(nil)
        return try await withThrowingTaskGroup(of: State?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await client.withConnection { connection in
                        leased.withLockedValue { $0 = connection }
                        do {
                            var state = state
                            var count: Int?
                            for try await next in try await connection.query(query, logger: logger) {
                                if count == nil { count = try PostgresSession.checkReadable(next) }
                                try row(&state, SQLCells(postgres: next, count: count!))
                            }
                            leased.withLockedValue { $0 = nil }
                            return state
                        } catch {
                            // A connection that failed other than by the server's answer (closed at the deadline or on
                            // cancellation, lost, or left mid-query by the reader's own error) goes back only once
                            // closed: the pool must not hand it out again.
                            if PostgresEngine.serverState(of: error) == nil {
                                connection.close().whenComplete { _ in }
                                try? await connection.closeFuture.get()
                            }
                            throw error
                        }
                    }
                } onCancel: {
                    // postgres-nio waits for a query's first answer without heeding cancellation: the close ends it.
                    if let connection = leased.withLockedValue({ $0 }) { connection.close().whenComplete { _ in } }
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(limit))
                return nil
            }
            defer { group.cancelAll() }
            guard case let state?? = try await group.next() else {
                // The time ran out: cancelling the read (the deferred `cancelAll`) closes its connection.
                let hadConnection = leased.withLockedValue { $0 != nil }
                throw hadConnection ? PostgresEngineError.noAnswer(sql, limit) : PostgresEngineError.poolExhausted(maximumConnections)
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
        return try ConnectionLease(client: client, started: started, within: leaseTimeout, maximumConnections: maximumConnections)
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

/// Transactions one after another on one connection, kept between them: a commit thread's, so a batch does not wait
/// for a lease. A connection that closed, or saw an error it cannot vouch for, is given back and another leased.
final class PostgresLane: TransactionLane, @unchecked Sendable {
    private let engine: PostgresEngine
    /// Touched only by the thread that owns the lane.
    private var lease: ConnectionLease?

    init(engine: PostgresEngine) {
        self.engine = engine
    }

    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try engine.transaction(body, on: onHeldConnection)
    }

    func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try engine.autocommit(body, on: onHeldConnection)
    }

    /// Runs `inner` on the held connection, leasing one first when none is held or the held one closed.
    private func onHeldConnection<T>(_ inner: (PostgresSession) throws -> T) throws -> T {
        if let held = lease, held.connection.isClosed {
            held.release()
            lease = nil
        }
        let current = try lease ?? engine.newLease()
        lease = current
        do {
            return try engine.session(on: current, inner)
        } catch {
            if current.connection.isClosed {
                current.release()
                lease = nil
            }
            throw error
        }
    }

    func close() {
        lease?.release()
        lease = nil
    }

    func idle() { close() }
}

/// A connection leased from `PostgresClient`, whose leases are async closures, to a thread that blocks: a task takes
/// the lease and hands the connection over, then waits until the thread gives it back.
final class ConnectionLease: @unchecked Sendable {
    private enum State {
        case waiting
        case leased(PostgresConnection, CheckedContinuation<Void, Never>)
        case failed(any Error)
        case abandoned
        case returned
    }

    private let state = NIOLockedValueBox<State>(.waiting)
    private let arrived = DispatchSemaphore(value: 0)
    /// The leased connection.
    private(set) var connection: PostgresConnection!

    /// Waits up to `seconds` for a connection, asked for once the client runs (`started`); past that the lease is
    /// abandoned and ``PostgresEngineError/poolExhausted(_:)`` thrown.
    init(client: PostgresClient, started: StopSignal, within seconds: TimeInterval, maximumConnections: Int) throws {
        // High priority: a commit thread waits for this task, and under load the cooperative pool is full of requests.
        let task = Task(priority: .high) { [state, arrived] in
            do {
                // A lease asked for before `run()` would wait all the same, with a warning from the client.
                await started.wait()
                try await client.withConnection { connection in
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let handed = state.withLockedValue { state -> Bool in
                            guard case .waiting = state else { return false }
                            state = .leased(connection, continuation)
                            return true
                        }
                        if handed { arrived.signal() } else { continuation.resume() }
                    }
                }
            } catch {
                let told = state.withLockedValue { state -> Bool in
                    guard case .waiting = state else { return false }
                    state = .failed(error)
                    return true
                }
                if told { arrived.signal() }
            }
        }
        if arrived.wait(timeout: .now() + seconds) == .timedOut {
            let gaveUp = state.withLockedValue { state -> Bool in
                guard case .waiting = state else { return false }
                state = .abandoned
                return true
            }
            if gaveUp {
                task.cancel()
                throw PostgresEngineError.poolExhausted(maximumConnections)
            }
            arrived.wait()
        }
        switch state.withLockedValue({ $0 }) {
        case .leased(let connection, _): self.connection = connection
        case .failed(let error): throw error
        case .waiting, .abandoned, .returned: throw PostgresEngineError.closed
        }
    }

    /// Gives the connection back to the client.
    func release() {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard case .leased(_, let continuation) = state else { return nil }
            state = .returned
            return continuation
        }
        continuation?.resume()
    }
}

/// A one-shot signal: the one that ends ``PostgresEngine/run()`` (and SQLite's) when the store closes, and the one that
/// tells PostgreSQL's readers the pool runs.
final class StopSignal: Sendable {
    private struct State {
        var fired = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// Whether ``fire()`` was called.
    var isFired: Bool { state.withLockedValue { $0.fired } }

    /// Wakes every waiter, now and later.
    func fire() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``fire()`` was called, or when the waiting task is cancelled.
    func wait() async {
        let id = state.withLockedValue { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLockedValue { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// A pooled connection and the statements prepared on it, which live as long as it does.
final class PooledConnection: @unchecked Sendable {
    let connection: PostgresConnection
    /// Prepared statements by text. Only the thread that holds the lease touches it.
    var prepared: [String: PreparedQuery] = [:]
    /// Statements sent without waiting for their answers (``PostgresSession/rowsAhead(_:_:reuse:)``), in order, each with its
    /// outcome once answered, until the next statement's answer settles them. Only the thread that holds the lease
    /// touches it.
    var sentAhead: [(sql: String, outcome: NIOLockedValueBox<Result<Void, any Error>?>)] = []
    /// What the statement in flight waits on, signalled also when the connection closes.
    private let waiting = NIOLockedValueBox<DispatchSemaphore?>(nil)

    init(_ connection: PostgresConnection) {
        self.connection = connection
        connection.closeFuture.whenComplete { [waiting] _ in waiting.withLockedValue { _ = $0?.signal() } }
    }

    /// Waits until `answered` is signalled or the connection closes, at most `seconds` (for ever when nil); false when
    /// the time ran out. PostgresNIO never answers a statement written to a connection that has closed, so the close
    /// must end the wait.
    func wait(for answered: DispatchSemaphore, within seconds: TimeInterval?) -> Bool {
        waiting.withLockedValue { $0 = answered }
        defer { waiting.withLockedValue { $0 = nil } }
        // A close before `waiting` was set signalled nothing; `isClosed` is true before the close callbacks run.
        if connection.isClosed { answered.signal() }
        guard let seconds else {
            answered.wait()
            return true
        }
        return answered.wait(timeout: .now() + seconds) == .success
    }
}

/// Why the PostgreSQL engine could not serve a request.
enum PostgresEngineError: Error, CustomStringConvertible {
    /// Every connection stayed busy past the wait limit.
    case poolExhausted(Int)
    /// The engine was closed.
    case closed
    /// A column had a type the store never uses.
    case unsupportedType(String)
    /// The server did not answer a statement in time; the connection was closed.
    case noAnswer(String, TimeInterval)
    /// The connection closed before the server answered a statement.
    case connectionLost(String)
    /// The server answered `COMMIT` by rolling the transaction back: a statement in it had failed.
    case rolledBack

    var description: String {
        switch self {
        case .poolExhausted(let size): "all \(size) PostgreSQL connections stayed busy; raise --database-pool or add capacity"
        case .closed: "the PostgreSQL engine is closed"
        case .unsupportedType(let type): "a result column has PostgreSQL type \(type), which the store does not read"
        case .noAnswer(let sql, let seconds): "PostgreSQL did not answer \(sql) within \(seconds) s; the connection was closed"
        case .connectionLost(let sql): "the connection to PostgreSQL closed before it answered \(sql)"
        case .rolledBack: "PostgreSQL rolled the transaction back at COMMIT: a statement in it had failed"
        }
    }
}

/// One leased PostgreSQL connection as an ``SQLSession``.
struct PostgresSession: SQLSession {
    let pooled: PooledConnection
    let logger: Logger
    /// Seconds a statement may go unanswered before the connection is closed; `nil` waits for ever.
    let answerTimeout: TimeInterval?
    var dialect: SQLDialect { .postgres }
    var connection: PostgresConnection { pooled.connection }

    func insert(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int64? {
        try value(sql + " RETURNING id", arguments, as: Int64.self)
    }

    func execute(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    /// A `.once` or `.cached` statement is unnamed and parsed each time, its argument types those of the values bound; a
    /// `.prepared` one is prepared on the connection the first time and only bound and run after that.
    func rows(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> [SQLRow] {
        try rowsAhead(sql, arguments, reuse: reuse)()
    }

    /// `rows` as the store's rows, each cell read as `format` when given (else as described).
    private static func rows(_ rows: [PostgresRow], format: PostgresFormat?) throws -> [SQLRow] {
        guard let first = rows.first else { return [] }
        let columns = first.map(\.columnName)
        return try rows.map { row in
            SQLRow(columns: columns, values: try row.map { cell in
                var cell = cell
                cell.format = format ?? cell.format
                return try Self.value(cell)
            })
        }
    }

    /// Runs a statement, waiting for its answer at most the session's ``answerTimeout``.
    @discardableResult
    func run(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> PostgresQueryResult {
        try answer(to: sql, connection.query(Self.query(sql, arguments), logger: logger), within: answerTimeout)
    }

    /// Runs a statement that must be answered within `seconds`; otherwise closes the connection and throws.
    @discardableResult
    func run(_ sql: String, _ arguments: [any SQLValueConvertible], answerWithin seconds: TimeInterval) throws -> PostgresQueryResult {
        try answer(to: sql, connection.query(Self.query(sql, arguments), logger: logger), within: seconds)
    }

    /// The connection's prepared statement of `sql`, prepared now if this connection has not yet.
    private func preparedStatement(_ sql: String) throws -> PreparedQuery {
        if let known = pooled.prepared[sql] { return known }
        precondition(Placeholders.everyOneCast(sql), "a prepared statement casts every placeholder: \(sql)")
        let statement = try answer(to: sql, connection.prepare(query: Placeholders.numbered(sql)), within: answerTimeout)
        pooled.prepared[sql] = statement
        return statement
    }

    /// Sends `sql` without waiting for its answer. PostgresNIO sends the next statement once the server has answered
    /// this one, and the answers arrive in order, so the next statement's answer settles it (``answer(to:_:within:)``):
    /// its failure is reported then, in place of that statement's, and a connection that closed before answering it is
    /// ``PostgresEngineError/connectionLost(_:)`` of `sql`, as if the thread had waited for it. A `.prepared` statement
    /// not yet prepared on this connection is prepared first, waiting for that.
    func rowsAhead(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> () throws -> [SQLRow] {
        let future: EventLoopFuture<[PostgresRow]>
        var format: PostgresFormat?
        if reuse == .prepared {
            future = try preparedStatement(sql).execute(arguments.map(Self.data))
            // PostgresNIO asks for a prepared statement's results in binary format but describes its columns as the
            // server did when preparing (text), so the cells are read as what was asked for.
            format = .binary
        } else {
            future = connection.query(Self.query(sql, arguments), logger: logger).map(\.rows)
        }
        let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)
        future.whenComplete { result in outcome.withLockedValue { $0 = result.map { _ in } } }
        pooled.sentAhead.append((sql, outcome))
        return { [format] in try Self.rows(try answer(to: sql, future, within: answerTimeout), format: format) }
    }

    /// The result of `future`, waited for at most `seconds` (for ever when nil); past that the connection is closed,
    /// since the server may never answer, and the statement fails. A connection that closes first fails it at once.
    /// A statement sent ahead is settled first: its failure, or its missing answer, is what is reported.
    private func answer<T: Sendable>(to sql: String, _ future: EventLoopFuture<T>, within seconds: TimeInterval?) throws -> T {
        let answered = DispatchSemaphore(value: 0)
        let answer = NIOLockedValueBox<Result<T, any Error>?>(nil)
        future.whenComplete { result in
            answer.withLockedValue { $0 = result }
            answered.signal()
        }
        let inTime = pooled.wait(for: answered, within: seconds)
        let result = answer.withLockedValue { $0 }
        // The statements sent ahead of this one were answered before it, if it was (their promises were completed
        // first); those still unanswered were sent after it (this is one sent ahead, asked for its rows) and wait for a
        // later answer, or, when this one has none, the first of them is what the server never answered.
        var unanswered = sql
        while let sent = pooled.sentAhead.first {
            guard let outcome = sent.outcome.withLockedValue({ $0 }) else {
                if result == nil { unanswered = sent.sql }
                break
            }
            pooled.sentAhead.removeFirst()
            if case .failure(let error) = outcome {
                pooled.sentAhead.removeAll()
                if connection.isClosed { throw PostgresEngineError.connectionLost(sent.sql) }
                throw error
            }
        }
        if let result { return try result.get() }
        if inTime { throw PostgresEngineError.connectionLost(unanswered) }
        // Closed, and the close finished, before the lease can be given back: the pool must not hand it out again.
        try? connection.close().wait()
        throw PostgresEngineError.noAnswer(unanswered, seconds ?? 0)
    }

    static func query(_ sql: String, _ arguments: [any SQLValueConvertible]) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            if let array = argument as? SQLArray {
                bindings.append(array)
                continue
            }
            switch argument.sqlValue {
            case .null: bindings.appendNull()
            case .integer(let integer): bindings.append(integer)
            case .real(let real): bindings.append(real)
            case .text(let text): bindings.append(text)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            }
        }
        return PostgresQuery(unsafeSQL: Placeholders.numbered(sql), binds: bindings)
    }

    /// One argument of a prepared statement, in binary format (the statement's casts give its type).
    static func data(_ argument: any SQLValueConvertible) -> PostgresData {
        if let array = argument as? SQLArray {
            var buffer = ByteBuffer()
            array.encode(into: &buffer, context: .default)
            return PostgresData(type: array.psqlType, formatCode: .binary, value: buffer)
        }
        return switch argument.sqlValue {
        case .null: PostgresData.null
        case .integer(let integer): PostgresData(int64: integer)
        case .real(let real): PostgresData(double: real)
        case .text(let text): PostgresData(string: text)
        case .blob(let bytes): PostgresData(type: .bytea, formatCode: .binary, value: ByteBuffer(bytes: bytes))
        }
    }

    /// A binary `numeric` (digit count, weight, sign, scale, then base-10,000 digits, most significant first) as an
    /// integer, when it is whole and fits in 64 bits; nil otherwise.
    static func wholeNumeric(_ bytes: ByteBuffer) -> Int64? {
        var buffer = bytes
        guard let count = buffer.readInteger(as: Int16.self), let weight = buffer.readInteger(as: Int16.self),
              let sign = buffer.readInteger(as: UInt16.self), buffer.readInteger(as: Int16.self) != nil,
              sign == 0 || sign == 0x4000, count >= 0, buffer.readableBytes == Int(count) * 2 else { return nil }
        if count == 0 { return 0 }
        guard weight >= 0, weight < 5 else { return nil }
        var magnitude: Int64 = 0
        for position in 0...Int(weight) {
            let digit = position < Int(count) ? Int64(buffer.readInteger(as: Int16.self) ?? 0) : 0
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10_000)
            let (sum, carry) = shifted.addingReportingOverflow(digit)
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        // Digits after the units are a fraction: whole only when they are all zero.
        while buffer.readableBytes >= 2 { if buffer.readInteger(as: Int16.self) != 0 { return nil } }
        return sign == 0x4000 ? -magnitude : magnitude
    }

    /// The column types ``value(_:)`` reads.
    static let readableTypes: Set<PostgresDataType> = [.int2, .int4, .int8, .bool, .float4, .float8, .numeric, .text, .varchar, .bpchar, .name, .bytea]

    /// How many columns `row` has; throws ``PostgresEngineError/unsupportedType(_:)`` when one has a type ``value(_:)``
    /// does not read.
    static func checkReadable(_ row: PostgresRow) throws -> Int {
        var count = 0
        for cell in row {
            guard readableTypes.contains(cell.dataType) else { throw PostgresEngineError.unsupportedType("\(cell.dataType)") }
            count += 1
        }
        return count
    }

    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2: return .integer(Int64(try cell.decode(Int16.self)))
        case .int4: return .integer(Int64(try cell.decode(Int32.self)))
        case .int8: return .integer(try cell.decode(Int64.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .float4: return .real(Double(try cell.decode(Float.self)))
        case .float8: return .real(try cell.decode(Double.self))
        case .numeric:
            // Sums of bigint and rounded values arrive as numeric: whole ones as integers, others as doubles, as SQLite
            // gives them. Whole ones, nearly every cell of a report, are read from the binary digits: through Foundation's
            // Decimal they cost about a microsecond each, a third of a 360-row report's time.
            if cell.format == .binary, let bytes = cell.bytes, let integer = Self.wholeNumeric(bytes) { return .integer(integer) }
            let text = try cell.decode(Decimal.self).description
            if let integer = Int64(text) { return .integer(integer) }
            return .real(Double(text) ?? .nan)
        case .text, .varchar, .bpchar, .name: return .text(try cell.decode(String.self))
        case .bytea:
            var buffer = try cell.decode(ByteBuffer.self)
            return .blob(buffer.readBytes(length: buffer.readableBytes) ?? [])
        default: throw PostgresEngineError.unsupportedType("\(cell.dataType)")
        }
    }
}

/// `?` placeholders numbered `$1`, `$2`, ... for PostgreSQL, where they are code: a `?` inside a string (`'...'`, with
/// `''` inside it, or `E'...'` with backslash escapes), a quoted name, a comment (`--`, `/* */`, nested) or a
/// dollar-quoted body (`$$...$$`, `$tag$...$tag$`) is text. `??` is jsonb's `?` operator, written once.
enum Placeholders {
    /// Whether each byte of `sql` is code (true) or inside text, a name, a comment or a dollar-quoted body (false).
    static func codeMask(_ sql: [UInt8]) -> [Bool] {
        var mask = [Bool](repeating: false, count: sql.count)
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte >= 0x80
        }
        var index = 0
        while index < sql.count {
            let byte = sql[index]
            let next: UInt8? = index + 1 < sql.count ? sql[index + 1] : nil
            switch byte {
            case UInt8(ascii: "'"):
                // E'...' takes backslash escapes; the E must start a word of its own.
                let escaped = index > 0 && (sql[index - 1] == UInt8(ascii: "E") || sql[index - 1] == UInt8(ascii: "e"))
                    && (index < 2 || !isWord(sql[index - 2]))
                index += 1
                // '' inside either kind of string is a quote, not its end.
                while index < sql.count {
                    if escaped, sql[index] == UInt8(ascii: "\\") {
                        index += 2
                    } else if sql[index] == UInt8(ascii: "'") {
                        guard index + 1 < sql.count, sql[index + 1] == UInt8(ascii: "'") else { break }
                        index += 2
                    } else {
                        index += 1
                    }
                }
                index += 1
            case UInt8(ascii: "\""):
                index += 1
                while index < sql.count, sql[index] != UInt8(ascii: "\"") { index += 1 }
                index += 1
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                while index < sql.count, sql[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                var depth = 0
                while index < sql.count {
                    if sql[index] == UInt8(ascii: "/"), index + 1 < sql.count, sql[index + 1] == UInt8(ascii: "*") {
                        depth += 1
                        index += 2
                    } else if sql[index] == UInt8(ascii: "*"), index + 1 < sql.count, sql[index + 1] == UInt8(ascii: "/") {
                        depth -= 1
                        index += 2
                        if depth == 0 { break }
                    } else {
                        index += 1
                    }
                }
            case UInt8(ascii: "$") where index == 0 || !(isWord(sql[index - 1]) || sql[index - 1] == UInt8(ascii: "$")):
                // A tag: $$ or $name$, the name not starting with a digit ($1 is a parameter).
                var end = index + 1
                while end < sql.count, isWord(sql[end]), !(end == index + 1 && sql[end] >= 0x30 && sql[end] <= 0x39) { end += 1 }
                guard end < sql.count, sql[end] == UInt8(ascii: "$") else {
                    mask[index] = true
                    index += 1
                    continue
                }
                let tag = sql[index...end]
                var close = end + 1
                while close < sql.count, !sql[close...].starts(with: tag) { close += 1 }
                index = min(sql.count, close + tag.count)
            default:
                mask[index] = true
                index += 1
            }
        }
        return mask
    }

    /// The statements of a script, split at `;` where it is code.
    static func statements(_ script: String) -> [String] {
        let bytes = Array(script.utf8)
        let mask = codeMask(bytes)
        var statements: [String] = []
        var start = 0
        for index in bytes.indices where mask[index] && bytes[index] == UInt8(ascii: ";") {
            statements.append(String(decoding: bytes[start..<index], as: UTF8.self))
            start = index + 1
        }
        statements.append(String(decoding: bytes[start...], as: UTF8.self))
        return statements.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    /// Whether every `?` placeholder in `sql` is cast (`?::bigint[]`), so the server's reading of each argument does not
    /// depend on where it appears.
    static func everyOneCast(_ sql: String) -> Bool {
        let bytes = Array(sql.utf8)
        let mask = codeMask(bytes)
        var index = 0
        while index < bytes.count {
            defer { index += 1 }
            guard mask[index], bytes[index] == UInt8(ascii: "?") else { continue }
            if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "?") {
                index += 1
                continue
            }
            if !bytes[(index + 1)...].starts(with: "::".utf8) { return false }
        }
        return true
    }

    /// `sql` with each placeholder numbered and each `??` made `?`.
    static func numbered(_ sql: String) -> String {
        let question = UInt8(ascii: "?")
        guard sql.utf8.contains(question) else { return sql }
        // Bytes, not Characters: a batch insert's text runs to tens of kilobytes.
        let bytes = Array(sql.utf8)
        let mask = codeMask(bytes)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        var count = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard mask[index - 1], byte == question else {
                output.append(byte)
                continue
            }
            if index < bytes.count, bytes[index] == question {
                output.append(question)
                index += 1
                continue
            }
            count += 1
            output.append(UInt8(ascii: "$"))
            output.append(contentsOf: String(count).utf8)
        }
        return String(decoding: output, as: UTF8.self)
    }
}
