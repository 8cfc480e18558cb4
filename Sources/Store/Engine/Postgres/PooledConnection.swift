import Foundation
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
