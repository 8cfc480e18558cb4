import ArgumentParser
import Store

/// Runs the stores a command opens (``StoreDatabase/run()``: PostgreSQL's pool of connections) for as long as the
/// command runs, and closes them when it ends. `serve` runs its store itself, beside the application.
enum StoreRunner {
    @TaskLocal private static var opened: AsyncStream<StoreDatabase>.Continuation?

    /// Runs `command`; a store handed to ``run(_:)`` meanwhile runs until the command returns or throws.
    static func running(_ command: sending any AsyncParsableCommand) async throws {
        var command = command
        let (stores, continuation) = AsyncStream.makeStream(of: StoreDatabase.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await withDiscardingTaskGroup { running in
                    for await store in stores { running.addTask { await store.run() } }
                }
            }
            defer {
                continuation.finish()
                group.cancelAll()
            }
            try await $opened.withValue(continuation) { try await command.run() }
        }
    }

    /// Runs `store` for the rest of the command.
    static func run(_ store: StoreDatabase) {
        opened?.yield(store)
    }
}
