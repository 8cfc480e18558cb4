import Logging
import Testing
@testable import Store
import TestSupport

/// A store runs while it is open and its run ends when it is closed, on both engines: what lets every test store's run
/// task (``TestStore/open(_:)``) end with its test instead of outliving it.
@Suite struct StoreLifecycleTests {
    @Test(arguments: TestEngine.allCases) func aStoreRunsUntilItIsClosed(engine: TestEngine) async throws {
        let store = try StoreDatabase(settings: StoreSettings(location: try DatabaseLocation(try engine.freshDatabase()), durability: .normal))
        let running = Task { await store.run() }
        try await store.checkReadable()
        store.close()
        // Joined: the run returns once the store is closed.
        await running.value
    }

    /// A command opens its store and reads at once, while the store's run starts PostgreSQL's pool. The read waits for
    /// the pool, and nothing is logged at the CLI's level: PostgresNIO warned, in some commands, that a connection was
    /// asked for before its client ran.
    @Test(arguments: TestEngine.allCases) func aStoreReadAsItStartsWarnsOfNothing(engine: TestEngine) async throws {
        let recorder = RecordingLogHandler()
        recorder.logLevel = .info
        let database = try engine.freshDatabase()
        for _ in 0..<20 {
            let store = try StoreDatabase(settings: StoreSettings(location: try DatabaseLocation(database), durability: .normal),
                                          logger: Logger(label: "countersign.store") { _ in recorder })
            let running = Task { await store.run() }
            try await store.checkReadable()
            store.close()
            await running.value
        }
        #expect(recorder.lines == [])
    }
}
