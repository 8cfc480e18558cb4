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
}
