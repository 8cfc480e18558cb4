import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// A pooled connection and the statements prepared on it, which live as long as it does.
final class PooledConnection: @unchecked Sendable {
    let connection: PostgresConnection
    /// Prepared statements by text. Only the thread that holds the lease touches it.
    var prepared: [String: PreparedQuery] = [:]
    /// Statements sent without waiting for their answers (``PostgresSession/rowsAhead(_:_:reuse:)``), in order, each with its
    /// outcome once answered, until the next statement's answer settles them. Only the thread that holds the lease
    /// touches it.
    var sentAhead: [(sql: String, outcome: NIOLockedValueBox<Result<Void, any Error>?>)] = []
    /// What ends the wait of the statement in flight when the connection closes: PostgresNIO never answers a statement
    /// written to a connection that has closed.
    private let ended = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    init(_ connection: PostgresConnection) {
        self.connection = connection
        connection.closeFuture.whenComplete { [ended] _ in ended.withLockedValue { $0 }?() }
    }

    /// Waits until `answered` is signalled or the connection closes, at most `seconds` (for ever when nil); false when
    /// the time ran out. PostgresNIO never answers a statement written to a connection that has closed, so the close
    /// must end the wait.
    func wait(for answered: DispatchSemaphore, within seconds: TimeInterval?) -> Bool {
        ended.withLockedValue { $0 = { answered.signal() } }
        defer { ended.withLockedValue { $0 = nil } }
        // A close before `ended` was set signalled nothing; `isClosed` is true before the close callbacks run.
        if connection.isClosed { answered.signal() }
        guard let seconds else {
            answered.wait()
            return true
        }
        return answered.wait(timeout: .now() + seconds) == .success
    }

    /// Sends `query` (`sql`'s) and returns its rows once the server begins to answer, or throws
    /// ``PostgresEngineError/connectionLost(_:)`` when the connection closes first: as soon as it closes, since
    /// PostgresNIO's `query` never returns for a query written to a connection that has closed (it runs in a task of its
    /// own, which is left waiting then), and when the server ended the connection as the query arrived.
    func rows(of query: PostgresQuery, sql: String, logger: Logger) async throws -> PostgresRowSequence {
        let waiter = NIOLockedValueBox<CheckedContinuation<PostgresRowSequence, any Error>?>(nil)
        defer { ended.withLockedValue { $0 = nil } }
        return try await withCheckedThrowingContinuation { continuation in
            waiter.withLockedValue { $0 = continuation }
            let lost: @Sendable () -> Void = { waiter.withLockedValue { $0.take() }?.resume(throwing: PostgresEngineError.connectionLost(sql)) }
            ended.withLockedValue { $0 = lost }
            // A close before `ended` was set called nothing; `isClosed` is true before the close callbacks run.
            if connection.isClosed { return lost() }
            Task { [connection] in
                let answer: Result<PostgresRowSequence, any Error>
                do {
                    answer = .success(try await connection.query(query, logger: logger))
                } catch let error as PSQLError where Self.closings.contains(error.code) || error.serverInfo?[.sqlState]?.hasPrefix("57P") == true {
                    answer = .failure(PostgresEngineError.connectionLost(sql))
                } catch {
                    answer = .failure(error)
                }
                waiter.withLockedValue { $0.take() }?.resume(with: answer)
            }
        }
    }

    /// How PostgresNIO reports a query that ended with its connection, before any answer (the server's own endings,
    /// such as `57P01` when an administrator ends the connection, are SQLSTATE class `57P`).
    private static let closings: [PSQLError.Code] = [.clientClosedConnection, .serverClosedConnection, .uncleanShutdown, .connectionError]
}
