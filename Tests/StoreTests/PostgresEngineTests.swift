import Foundation
import Testing
@testable import Store
import TestSupport

/// The PostgreSQL engine's own guarantees, beyond what both engines share.
@Suite struct PostgresEngineTests {
    /// A connection whose server stops answering (found under "PostgreSQL restarted under load": a receiver's commit
    /// thread waited for ever on an `INSERT`, so it acknowledged nothing more and could not shut down).
    @Test func aStatementTheServerNeverAnswersFailsItsTransactionAndTheNextOneReconnects() throws {
        let store = try StoreDatabase(settings: StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), statementTimeout: 1))
        let started = Date()
        var frozen: Int32?
        let failure = #expect(throws: PostgresEngineError.self) {
            try store.engine.transaction { db in
                let backend = try #require(try db.value("SELECT pg_backend_pid()", as: Int.self))
                // The server process behind this connection freezes: it reads nothing and answers nothing.
                frozen = Int32(backend)
                kill(Int32(backend), SIGSTOP)
                return try db.value("SELECT 1", as: Int.self)
            }
        }
        if let frozen { kill(frozen, SIGCONT) }
        #expect(frozen != nil)
        guard case .noAnswer(let sql, let seconds) = failure else { Issue.record("\(String(describing: failure))"); return }
        #expect(sql == "SELECT 1")
        #expect(seconds == 1 + PostgresEngine.answerGrace)
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= seconds - 0.5 && waited < seconds + 10, "waited \(waited) s")
        // The unanswered connection was closed, not handed out again: the next transaction gets a new one and works.
        #expect(try store.engine.transaction { db in try db.value("SELECT 2", as: Int.self) } == 2)
    }
}
