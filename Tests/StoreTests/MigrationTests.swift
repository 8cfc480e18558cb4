import Foundation
import Testing
@testable import Store
import TestSupport

/// Migrations on both engines: a database that a newer Countersign migrated further is refused with a clear error,
/// never opened as if this build knew its tables (issue 29, smaller defects).
@Suite struct MigrationTests {
    @Test(arguments: TestEngine.allCases) func aDatabaseMigratedByANewerBuildIsRefused(engine: TestEngine) async throws {
        let url = try engine.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(url)))
        let table = engine == .sqlite ? "grdb_migrations (identifier)" : "countersign_migrations (name)"
        try await store.engine.write { db in try db.execute("INSERT INTO \(table) VALUES ('v99-from-the-future')") }
        store.close()
        #expect {
            _ = try TestStore.open(StoreSettings(location: try DatabaseLocation(url)))
        } throws: { error in
            (error as? MigrationError).map { "\($0)" } == "the database has migration v99-from-the-future, which this build does not know; run the newer countersign that applied it"
        }
    }
}
