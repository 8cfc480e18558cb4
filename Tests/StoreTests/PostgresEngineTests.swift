import Foundation
import Logging
import Testing
@testable import Store
import TestSupport

/// The PostgreSQL engine's own guarantees, beyond what both engines share.
@Suite struct PostgresEngineTests {
    /// A connection whose server stops answering (found under "PostgreSQL restarted under load": a receiver's commit
    /// thread waited for ever on an `INSERT`, so it acknowledged nothing more and could not shut down).
    @Test func aStatementTheServerNeverAnswersFailsItsTransactionAndTheNextOneReconnects() throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), statementTimeout: 1))
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

    /// An export's read (``PostgresEngine/readRows(_:_:reuse:into:_:)``, async, outside the blocking threads) from a server that
    /// stops answering ends within the engine's limit too, with the connection closed, and the next read reconnects.
    @Test func anExportReadTheServerNeverAnswersEndsAndTheNextOneReconnects() async throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), poolSize: 1, statementTimeout: 1))
        // One connection in the pool: the read that learns its backend and the read that meets it frozen share it.
        let backend = try await store.engine.readRows("SELECT pg_backend_pid()", [], reuse: .once, into: Int64(0)) { pid, row in
            pid = row.withCell(at: 0) { if case .integer(let value) = $0 { value } else { 0 } }
        }
        #expect(backend > 0)
        kill(Int32(backend), SIGSTOP)
        let failure = await #expect(throws: PostgresEngineError.self) {
            _ = try await store.engine.readRows("SELECT 1", [], reuse: .once, into: 0) { count, _ in count += 1 }
        }
        kill(Int32(backend), SIGCONT)
        guard case .noAnswer(let sql, _) = failure else { Issue.record("\(String(describing: failure))"); return }
        #expect(sql == "SELECT 1")
        #expect(try await store.engine.readRows("SELECT 1 UNION ALL SELECT 2", [], reuse: .once, into: 0) { count, _ in count += 1 } == 2)
    }

    /// A request that goes away while its export read waits for the server's first answer stops the read at once: the
    /// read's connection is closed (postgres-nio does not heed cancellation before that answer), not held until the
    /// query ends.
    @Test func aCancelledExportReadEndsAtOnce() async throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), poolSize: 2, statementTimeout: 120))
        let read = Task { try await store.engine.readRows("SELECT pg_sleep(60)", [], reuse: .once, into: 0) { count, _ in count += 1 } }
        // The query is running on the server.
        while try await store.engine.read({ db in
            try db.value("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'", as: Int.self)
        }) != 1 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let started = Date()
        read.cancel()
        await #expect(throws: (any Error).self) { _ = try await read.value }
        let waited = Date().timeIntervalSince(started)
        #expect(waited < 30, "the cancelled read waited \(waited) s")
        // The server's query ended with its connection.
        #expect(try await store.engine.readRows("SELECT 1", [], reuse: .once, into: 0) { count, _ in count += 1 } == 1)
    }

    /// A server that is down is told from a pool that is full (found when a receiver whose server was killed logged
    /// "all 10 PostgreSQL connections stayed busy" for every request and took 30.7 s to stop on SIGTERM): a wait for a
    /// connection that ends while the pool holds fewer than its most is `unreachable`, for transactions and for reads;
    /// later waits are short (``PoolUse/unreachableWait``, not the connect timeout); and once the server is back the
    /// store works again by itself.
    @Test func aServerThatIsDownIsToldFromAFullPool() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let log = RecordingLogHandler()
        log.logLevel = .info
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestPostgres.createDatabase(on: cluster.server)), poolSize: 2,
                                                     connectTimeout: 4), logger: Logger(label: "countersign.store") { _ in log })
        defer { store.close() }
        #expect(try store.engine.transaction { db in try db.value("SELECT 1", as: Int.self) } == 1)
        try cluster.stop()
        for attempt in 0..<2 {
            let started = Date()
            let failure = #expect(throws: PostgresEngineError.self) { try store.engine.transaction { db in try db.value("SELECT 1", as: Int.self) } }
            guard case .unreachable(let seconds)? = failure else { Issue.record("\(String(describing: failure))"); return }
            #expect(seconds == (attempt == 0 ? 4 : PoolUse.unreachableWait))
            let waited = Date().timeIntervalSince(started)
            if attempt == 1 { #expect(waited < 3, "waited \(waited) s once the server was known unreachable") }
        }
        let read = await #expect(throws: PostgresEngineError.self) {
            _ = try await store.engine.readRows("SELECT 1", [], reuse: .once, into: 0) { count, _ in count += 1 }
        }
        guard case .unreachable? = read else { Issue.record("\(String(describing: read))"); return }
        // The error says the pool's log tells why (docs/operations.md): PostgresNIO's line, at the default level.
        #expect(log.lines.contains { $0.hasPrefix("Connection creation failed") && $0.contains("error=") })
        try cluster.start()
        #expect(await eventually(within: 60) { (try? store.engine.transaction { db in try db.value("SELECT 2", as: Int.self) }) == 2 })
    }

    /// A pool whose every connection is in use still says so, with the server up.
    @Test func aFullPoolIsToldFromAServerThatIsDown() throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), poolSize: 1, connectTimeout: 1))
        defer { store.close() }
        let failure = #expect(throws: PostgresEngineError.self) {
            try store.engine.transaction { _ in try store.engine.transaction { db in try db.value("SELECT 1", as: Int.self) } }
        }
        guard case .poolExhausted(1)? = failure else { Issue.record("\(String(describing: failure))"); return }
    }

    /// A statement written to a connection the server has already closed (found under "PostgreSQL restarted under
    /// load": the server ended a receiver's connection between `BEGIN` and the catalogue check, PostgresNIO never
    /// answered the check, and the commit thread, then the receiver's shutdown, waited out the 35 s answer limit).
    @Test(arguments: [StatementReuse.once, .prepared])
    func aStatementOnAConnectionTheServerClosedFailsAtOnce(reuse: StatementReuse) throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), poolSize: 2, statementTimeout: 20))
        let started = Date()
        let failure = #expect(throws: PostgresEngineError.self) {
            try store.engine.transaction { db in
                let backend = try #require(try db.value("SELECT pg_backend_pid()", as: Int.self))
                try store.engine.snapshot { other in _ = try other.execute("SELECT pg_terminate_backend(?::int)", [backend]) }
                let deadline = Date().addingTimeInterval(5)
                while !(db as! PostgresSession).connection.isClosed, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
                return try db.rows("SELECT app, revision FROM schema_catalogue()", [], reuse: reuse)
            }
        }
        guard case .connectionLost(let sql) = failure else { Issue.record("\(String(describing: failure))"); return }
        #expect(sql == "SELECT app, revision FROM schema_catalogue()")
        let waited = Date().timeIntervalSince(started)
        #expect(waited < 3, "waited \(waited) s for a closed connection")
        #expect(try store.engine.transaction { db in try db.value("SELECT 2", as: Int.self) } == 2)
    }

    /// An export's read on a connection that has already closed fails at once (found when a shard of `make test` waited
    /// for ever in `TableWriterTests`: PostgresNIO's `query` never returns for a query written to a closed connection,
    /// and the read's own time limit could not end a task that waited on it).
    @Test func aReadOnAConnectionAlreadyClosedFailsAtOnce() async throws {
        let store = try TestEngine.postgres.freshStore()
        defer { store.close() }
        let engine = try #require(store.engine as? PostgresEngine)
        #expect(try await store.engine.readRows("SELECT 1", [], reuse: .once, into: 0) { count, _ in count += 1 } == 1)
        try await engine.client.withConnection { connection in
            try await connection.close()
            let failure = await #expect(throws: PostgresEngineError.self) {
                _ = try await PooledConnection(connection).rows(of: PostgresSession.query("SELECT 2", []), sql: "SELECT 2", logger: Logger(label: "test"))
            }
            guard case .connectionLost("SELECT 2")? = failure else { Issue.record("\(String(describing: failure))"); return }
        }
    }

    /// A read whose pooled connection the server has just ended runs on another: reads right after the server ends the
    /// pool's idle connection all answer, whether the pool saw the close before the lease or not.
    @Test func aReadOnAPooledConnectionTheServerEndedRunsOnAnother() async throws {
        let location = try TestEngine.postgres.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(location), poolSize: 1))
        defer { store.close() }
        func backend() async throws -> Int64 {
            try await store.engine.readRows("SELECT pg_backend_pid()", [], reuse: .once, into: Int64(0)) { pid, row in
                pid = row.withCell(at: 0) { if case .integer(let value) = $0 { value } else { 0 } }
            }
        }
        var pid = try await backend()
        for _ in 0..<20 {
            try TestPostgres.run("SELECT pg_terminate_backend(\(pid))", on: try PostgresLocation(url: location))
            let next = try await backend()
            #expect(next != pid && next > 0)
            pid = next
        }
    }

    /// A transaction whose body caught a statement's failure and went on is not reported committed: PostgreSQL
    /// answers its `COMMIT` by rolling it back, with no error, and the engine says so.
    @Test func aTransactionAbortedByACaughtFailureIsNotReportedCommitted() async throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), poolSize: 1))
        try await store.engine.write { db in _ = try db.execute("CREATE TABLE kept (n bigint PRIMARY KEY)", []) }
        let failure = #expect(throws: PostgresEngineError.self) {
            try store.engine.transaction { db in
                _ = try db.execute("INSERT INTO kept (n) VALUES (1)", [])
                _ = try? db.execute("INSERT INTO kept (n) VALUES (1)", [])
            }
        }
        guard case .rolledBack = failure else { Issue.record("\(String(describing: failure))"); return }
        #expect(try await store.scalar("SELECT count(*) FROM kept", as: Int.self) == 0)
        try store.engine.transaction { db in _ = try db.execute("INSERT INTO kept (n) VALUES (2)", []) }
        #expect(try await store.scalar("SELECT count(*) FROM kept", as: Int.self) == 1)
    }

    /// A transaction the server undid for a serialization failure or deadlock runs again, whether the failing statement
    /// was prepared or not (PostgresNIO reports a prepared statement's server errors as another type).
    @Test(arguments: [StatementReuse.once, .prepared])
    func aTransactionTheServerAsksToRetryRunsAgain(reuse: StatementReuse) throws {
        let location = try TestEngine.postgres.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(location)))
        try store.engine.transaction { db in
            try db.execute("CREATE SEQUENCE attempts", [])
            try db.execute("""
                CREATE FUNCTION once_refused(n bigint) RETURNS bigint LANGUAGE plpgsql AS $$
                BEGIN
                    IF nextval('attempts') = 1 THEN RAISE EXCEPTION 'could not serialize' USING ERRCODE = '40001'; END IF;
                    RETURN n;
                END $$
                """, [])
        }
        let answer = try store.engine.transaction { db in
            try db.rows("SELECT once_refused(?::bigint) AS n", [Int64(7)], reuse: reuse).first?.get("n", as: Int64.self)
        }
        #expect(answer == 7)
        #expect(try store.engine.transaction { db in try db.value("SELECT last_value FROM attempts", as: Int.self) } == 2)
    }

    /// A statement every commit runs (the ingest batch, the catalogue check, the fold) is prepared once per connection,
    /// its results read exactly as a statement parsed each time gives them, and prepared again on a new connection.
    @Test func aPreparedStatementIsParsedOncePerConnectionAndAnswersAsAnyOther() throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.postgres.freshDatabase()), poolSize: 1))
        let sql = "SELECT ?::bigint AS n, ?::text AS t, ?::bytea AS b, ?::float8 AS f, ?::text AS z, cardinality(?::bigint[]) AS a"
        let arguments: [any SQLValueConvertible] = [Int64(-7), "é?", Data([0, 255]), 2.5, String?.none,
                                                    SQLArray(element: .bigint, values: [.integer(1), .integer(2)])]
        let prepared = "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%cardinality%'"
        let (first, again, parsed, count) = try store.engine.transaction { db in
            (try db.rows(sql, arguments, reuse: .prepared), try db.rows(sql, arguments, reuse: .prepared),
             try db.rows(sql.replacingOccurrences(of: " AS a", with: " AS a, 1 AS once"), arguments, reuse: .once),
             try db.value(prepared, as: Int.self))
        }
        #expect(count == 1)
        let values = try #require(first.first).values
        #expect(values == [.integer(-7), .text("é?"), .blob([0, 255]), .real(2.5), .null, .integer(2)])
        #expect(try #require(again.first).values == values)
        #expect(try #require(parsed.first).values == values + [.integer(1)])
        // A later transaction on the same connection finds it prepared.
        #expect(try store.engine.transaction { db in
            _ = try db.rows(sql, arguments, reuse: .prepared)
            return try db.value(prepared, as: Int.self)
        } == 1)
        // The connection dies; the next one prepares the statement for itself.
        _ = try? store.engine.transaction { db in try db.execute("SELECT pg_terminate_backend(pg_backend_pid())") }
        let (before, after) = try store.engine.transaction { db in
            (try db.value(prepared, as: Int.self), try db.rows(sql, arguments, reuse: .prepared).first?.values)
        }
        #expect(before == 0)
        #expect(after == values)
    }

    /// A prepared statement's placeholders must all be cast, since the server fixes their types when it prepares.
    /// Whole numerics (sums of bigint) are read from their binary digits; the answer equals Foundation's reading of the
    /// same value, whole or not, positive or negative, up to the edges of 64 bits and past them.
    @Test func numericCellsReadAsSQLiteWouldGiveThem() throws {
        let store = try TestEngine.postgres.freshStore()
        defer { store.close() }
        let texts = ["0", "1", "-1", "9999", "10000", "10001", "-20000", "123456789012", "100000000", "1.5", "-2.25", "2.0000",
                     "0.0001", "1000000000000000000", "9223372036854775807", "-9223372036854775807", "9223372036854775808",
                     "99999999999999999999", "12345.6789", "0.5000"]
        for text in texts {
            let value = try store.engine.snapshot { db in try db.rows("SELECT CAST(? AS numeric) AS n", [text], reuse: .once)[0].values[0] }
            let expected: SQLValue = if let whole = Int64(text) { .integer(whole) } else if let decimal = Decimal(string: text), let whole = Int64(decimal.description) {
                .integer(whole)
            } else {
                .real(Double(Decimal(string: text)!.description)!)
            }
            #expect(value == expected, "\(text)")
        }
    }

    /// A `?` inside a comment, an escaped string (`E'...'`), a dollar-quoted body or a quoted name is text, not a
    /// placeholder; `??` is jsonb's `?` operator (issue 28: the rewriter knew none of these).
    @Test func placeholdersAreNumberedOnlyWhereTheyAreCode() {
        #expect(Placeholders.numbered("SELECT ? -- why? it's\n, ?") == "SELECT $1 -- why? it's\n, $2")
        #expect(Placeholders.numbered("SELECT /* a ? 'b */ ?, ?") == "SELECT /* a ? 'b */ $1, $2")
        #expect(Placeholders.numbered("SELECT E'it\\'s ?', ?") == "SELECT E'it\\'s ?', $1")
        #expect(Placeholders.numbered("SELECT 'it''s ?', ?") == "SELECT 'it''s ?', $1")
        #expect(Placeholders.numbered("SELECT $$ ? $$, $tag$ a ? $$ ? $tag$, ?") == "SELECT $$ ? $$, $tag$ a ? $$ ? $tag$, $1")
        #expect(Placeholders.numbered("SELECT \"odd?\", ? FROM t WHERE doc ?? 'key' AND doc ??| ?::text[]")
            == "SELECT \"odd?\", $1 FROM t WHERE doc ? 'key' AND doc ?| $2::text[]")
        #expect(Placeholders.numbered("SELECT E'a''\\'?', ?") == "SELECT E'a''\\'?', $1")
        #expect(Placeholders.numbered("SELECT x$$y, ?") == "SELECT x$$y, $1")
        #expect(Placeholders.numbered("SELECT 1") == "SELECT 1")
    }

    /// A script splits at `;` only where it is code: not inside comments, strings or dollar-quoted bodies.
    @Test func scriptsSplitAtSemicolonsOutsideTextAndBodies() {
        let script = """
            -- a comment; not a statement
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$;
            SELECT E'a\\';b', 'c;d' /* e; f */;
            SELECT $$;$$
            """
        #expect(Placeholders.statements(script) == [
            "-- a comment; not a statement\nCREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$",
            "SELECT E'a\\';b', 'c;d' /* e; f */",
            "SELECT $$;$$",
        ])
    }

    @Test func onlyStatementsWhosePlaceholdersAreAllCastArePrepared() {
        #expect(Placeholders.everyOneCast("SELECT * FROM unnest(?::bigint[], ?::text[])"))
        #expect(Placeholders.everyOneCast("SELECT 'why?' || ?::text, \"odd?\" FROM t"))
        #expect(Placeholders.everyOneCast("SELECT 1"))
        #expect(!Placeholders.everyOneCast("SELECT ?::text, ? + 1"))
        #expect(!Placeholders.everyOneCast("SELECT ?:text"))
        #expect(!Placeholders.everyOneCast("SELECT ?"))
        #expect(Placeholders.everyOneCast("SELECT ?::text -- and ? here\n"))
        #expect(Placeholders.everyOneCast("SELECT doc ?? 'key', ?::text"))
    }

    /// A copy's counters move its postback's rollup row only once the postback is folded (the trigger leaves a pending
    /// row to the fold), so the rollup rows a batch of copies locks ahead (``Rollup/postgresLockForCopies``) are those of
    /// folded postbacks only. Locking a pending one's made the copy wait for a fold holding the same busy keys.
    @Test func aCopysRollupLocksLeaveOutPostbacksNotYetFolded() async throws {
        let store = try TestEngine.postgres.freshStore()
        let traffic = try EngineEqualityTests.traffic(count: 120)
        _ = try store.ledger.persist(traffic.indices.filter { $0 % 2 == 0 }.map { traffic[$0] })
        try store.rollup.fold()
        _ = try store.ledger.persist(traffic.indices.filter { $0 % 2 == 1 }.map { traffic[$0] })
        let pending = try await store.column("SELECT id FROM rollup_pending", as: Int64.self)
        let folded = try await store.column("SELECT id FROM postbacks WHERE id NOT IN (SELECT id FROM rollup_pending)", as: Int64.self)
        // The case that matters: pending postbacks the rollup counts, whose rollup rows exist already. Folded postbacks
        // sharing their keys would make those rows; in this traffic none do, so the pending ones are added up here.
        let countedPending = try await store.scalar("SELECT count(*) FROM postbacks p WHERE p.id IN (SELECT id FROM rollup_pending) AND \(Rollup.counted("p"))", as: Int64.self)
        #expect((countedPending ?? 0) > 0)
        try store.engine.transaction { db in _ = try db.execute(Rollup.insert(from: "postbacks", where: "p.id IN (SELECT id FROM rollup_pending)"), []) }
        let key = Rollup.values(row: "p").prefix(Rollup.key.count).joined(separator: ", ")
        let foldedKeys = try await store.scalar("SELECT count(*) FROM (SELECT DISTINCT \(key) FROM postbacks p "
            + "WHERE p.id NOT IN (SELECT id FROM rollup_pending) AND \(Rollup.counted("p"))) k", as: Int64.self)
        #expect(!pending.isEmpty && (foldedKeys ?? 0) > 0)
        func locked(_ ids: [Int64]) throws -> Int {
            try store.engine.transaction { db in
                try db.rows(Rollup.postgresLockForCopies, [SQLArray(element: .bigint, values: ids.map(SQLValue.integer))], reuse: .once).count
            }
        }
        #expect(try locked(pending) == 0)
        #expect(try locked(folded) == foldedKeys.map(Int.init))
    }
}
