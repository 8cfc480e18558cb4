import Foundation
@testable import Store
import TestSupport
import Testing

/// A query sent ahead (``SQLSession/rowsAhead(_:_:reuse:)``: PostgreSQL sends it without waiting, its answer arriving
/// with the next statement's) runs in order with the transaction's statements, on both engines.
@Suite struct RowsAheadTests {
    /// Its rows are there when asked for, after later statements ran.
    @Test(arguments: TestEngine.allCases) func aQuerySentAheadGivesItsRowsAfterTheNextStatement(engine: TestEngine) throws {
        let store = try engine.freshStore()
        let (ahead, next) = try store.engine.transaction { db in
            let later = try db.rowsAhead("SELECT 41 + 1 AS n", [], reuse: .once)
            let next = try db.value("SELECT 7", as: Int64.self)
            return (try later().first?.get("n", as: Int64.self), next)
        }
        #expect(ahead == 42 && next == 7)
        // Asked for with no statement after it, it is waited for.
        #expect(try store.engine.transaction { db in try db.rowsAhead("SELECT 5 AS n", [], reuse: .once)().first?.get("n", as: Int64.self) } == 5)
    }

    /// One that fails fails the transaction with its own error (not the next statement's "transaction aborted"),
    /// whether a statement follows it or only `COMMIT`, and nothing of the transaction stays: what ran before it, and
    /// what was sent after it, are rolled back. The connection serves the next transaction (one connection in the pool).
    @Test(arguments: TestEngine.allCases, [true, false])
    func aFailingQuerySentAheadFailsItsTransaction(engine: TestEngine, statementAfter: Bool) async throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try engine.freshDatabase()), poolSize: 1))
        try await store.engine.write { db in _ = try db.execute("CREATE TABLE ahead (n bigint PRIMARY KEY)", []) }
        let failure = #expect(throws: (any Error).self) {
            try store.engine.transaction { db in
                _ = try db.execute("INSERT INTO ahead (n) VALUES (1)", [])
                _ = try db.rowsAhead("INSERT INTO ahead (n) VALUES (2), (2)", [], reuse: .once)
                if statementAfter { _ = try db.execute("INSERT INTO ahead (n) VALUES (3)", []) }
            }
        }
        if engine == .postgres { #expect(PostgresEngine.serverState(of: try #require(failure)) == "23505") }
        #expect(try await store.scalar("SELECT count(*) FROM ahead", as: Int.self) == 0)
        try store.engine.transaction { db in _ = try db.execute("INSERT INTO ahead (n) VALUES (4)", []) }
        #expect(try await store.scalar("SELECT count(*) FROM ahead", as: Int.self) == 1)
    }
}
