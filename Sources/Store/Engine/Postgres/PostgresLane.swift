import Foundation
import PostgresNIO

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
