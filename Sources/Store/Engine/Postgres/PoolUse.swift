import Foundation
import Synchronization

/// How many of the client's connections the engine holds, and whether the last wait for one found PostgreSQL
/// unreachable. A wait that ends without a connection while the engine held fewer than the pool's most means the client
/// could not open one: the server is down or cannot be reached, not busy. While that is so, a wait is cut to
/// ``unreachableWait``, so requests fail fast and a receiver stops promptly; the first connection given ends it.
final class PoolUse: Sendable {
    /// The most connections the client opens.
    let maximumConnections: Int
    /// The longest a wait for a connection lasts while PostgreSQL is unreachable: long enough for a server that came
    /// back to hand over a connection the client opens, short enough that each step of a shutdown is quick.
    static let unreachableWait: TimeInterval = 1
    private let held = Atomic<Int>(0)
    private let unreachable = Atomic<Bool>(false)

    init(maximumConnections: Int) {
        self.maximumConnections = maximumConnections
    }

    /// Runs `body` while the client has given the engine a connection, counting it held; the server answered, so
    /// PostgreSQL is reachable.
    func holding<T>(_ body: () async throws -> T) async rethrows -> T {
        held.add(1, ordering: .relaxed)
        unreachable.store(false, ordering: .relaxed)
        defer { held.subtract(1, ordering: .relaxed) }
        return try await body()
    }

    /// How long to wait for a connection: `normally`, or ``unreachableWait`` while PostgreSQL is unreachable.
    func wait(normally: TimeInterval) -> TimeInterval {
        unreachable.load(ordering: .relaxed) ? min(normally, Self.unreachableWait) : normally
    }

    /// Why a wait of `seconds` ended without a connection: every connection held (the pool is full), or fewer (the
    /// client could not open one, and later waits are short until it does).
    func gaveNothing(within seconds: TimeInterval) -> PostgresEngineError {
        guard held.load(ordering: .relaxed) < maximumConnections else { return .poolExhausted(maximumConnections) }
        unreachable.store(true, ordering: .relaxed)
        return .unreachable(seconds)
    }
}
