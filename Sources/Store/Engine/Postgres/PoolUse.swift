import Foundation
import Synchronization

/// How many of the client's connections the engine holds, how many it has been given, and whether the last wait for one
/// found PostgreSQL unreachable. A wait that ends without a connection, while the engine held fewer than the pool's most
/// and nobody was given one meanwhile, means the client could not open one: the server is down, cannot be reached or
/// refuses connections, rather than busy. While that is so a wait is cut to ``unreachableWait``, so requests fail fast
/// and a receiver stops promptly; the next connection given ends it.
final class PoolUse: Sendable {
    /// The most connections the client opens.
    let maximumConnections: Int
    /// The longest a wait for a connection lasts while PostgreSQL is unreachable: long enough for a server that came
    /// back to hand over a connection the client opens, short enough that each step of a shutdown is quick.
    static let unreachableWait: TimeInterval = 1
    /// Connections held now.
    private let held = Atomic<Int>(0)
    /// Connections given so far.
    private let given = Atomic<Int>(0)
    /// Whether the last wait found PostgreSQL unreachable.
    private let unreachable = Atomic<Bool>(false)

    /// Counts for a pool of at most `maximumConnections`.
    init(maximumConnections: Int) {
        self.maximumConnections = maximumConnections
    }

    /// Runs `body` while the client has given the engine a connection, counting it held.
    func holding<T>(_ body: () async throws -> T) async rethrows -> T {
        held.add(1, ordering: .relaxed)
        given.add(1, ordering: .relaxed)
        if unreachable.load(ordering: .relaxed) { unreachable.store(false, ordering: .relaxed) }
        defer { held.subtract(1, ordering: .relaxed) }
        return try await body()
    }

    /// A wait for a connection about to start: how long it lasts (`normally`, or ``unreachableWait`` while PostgreSQL
    /// is unreachable) and the count of connections given so far, for ``gaveNothing(within:since:)``.
    func waiting(normally: TimeInterval) -> (seconds: TimeInterval, givenBefore: Int) {
        (unreachable.load(ordering: .relaxed) ? min(normally, Self.unreachableWait) : normally, given.load(ordering: .relaxed))
    }

    /// Why a wait of `seconds` that began when `givenBefore` connections had been given ended without one: the pool was
    /// full (every connection held, or others given connections meanwhile), or the client could not open one (and
    /// later waits are short until it does).
    func gaveNothing(within seconds: TimeInterval, since givenBefore: Int) -> PostgresEngineError {
        guard held.load(ordering: .relaxed) < maximumConnections, given.load(ordering: .relaxed) == givenBefore else {
            return .poolExhausted(maximumConnections)
        }
        unreachable.store(true, ordering: .relaxed)
        return .unreachable(seconds)
    }
}
