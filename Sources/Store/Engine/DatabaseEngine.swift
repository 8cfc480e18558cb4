import Dispatch

/// A database the store runs on: SQLite (embedded, one process) or PostgreSQL (shared by several receivers).
///
/// Both entry points block the calling thread until the database answers, so the store's rules can be written once as
/// plain synchronous code over ``SQLSession`` and run unchanged on either engine. Async callers go through
/// ``write(_:)`` and ``read(_:)``, which run the work on a dispatch thread, never on Swift's cooperative pool.
public protocol DatabaseEngine: Sendable {
    /// Which SQL the engine speaks.
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction and commits it; rolls back and rethrows if `body` throws. Blocks the caller.
    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Runs `body` against a consistent read snapshot. Blocks the caller.
    func snapshot<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Closes the engine's connections.
    func close()
}

extension DatabaseEngine {
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

/// Runs blocking database work on a dispatch thread, so it never holds one of the cooperative pool's few threads.
enum Blocking {
    private static let queue = DispatchQueue(label: "countersign.store", attributes: .concurrent)

    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
