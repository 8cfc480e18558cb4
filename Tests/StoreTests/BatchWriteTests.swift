import Foundation
import NIOConcurrencyHelpers
import JWS
import MetricsTestKit
import Postback
import PostbackMint
import Testing
@testable import Store
import TestSupport

/// A batch is written a few statements per table (issue 28): on SQLite multi-row inserts cut into chunks of 64, 32,
/// ..., 1 rows, on PostgreSQL one statement of arrays. Whatever its size and wherever copies of one postback fall in
/// it, a batch stores exactly what the same intakes store one per transaction.
@Suite struct BatchWriteTests {
    /// What a store holds, without ids (the engines number rows differently): every receipt's disposition and the row it
    /// names, every row with its copy counts, events and forwarding entries.
    static func contents(_ store: StoreDatabase) async throws -> [String] {
        let postbacks = try await store.rows("""
            SELECT 'postback', p.dedup_key, p.outcome, r.disposition, p.duplicates, p.replays, p.unverified_copies, p.event_count,
                   (SELECT count(*) FROM postback_events e WHERE e.postback_id = p.id),
                   (SELECT count(*) FROM forward_outbox o WHERE o.postback_id = p.id),
                   (SELECT count(*) FROM receipts c WHERE c.postback_id = p.id)
            FROM postbacks p JOIN receipts r ON r.id = p.receipt_id ORDER BY p.dedup_key
            """)
        let receipts = try await store.rows("""
            SELECT 'receipt', r.received_at, r.outcome, r.disposition, coalesce(r.reason, '-'), coalesce(p.dedup_key, '-')
            FROM receipts r LEFT JOIN postbacks p ON p.id = r.postback_id ORDER BY 2, 3, 4, 5, 6
            """)
        let rows = postbacks + receipts
        return rows.map { row in row.values.map { ReportTable.cell($0).serialized }.joined(separator: "|") }
    }

    @Test(arguments: TestEngine.allCases) func aBatchStoresWhatOnePerTransactionStores(engine: TestEngine) async throws {
        var traffic = try EngineEqualityTests.traffic(count: 240)
        // Exact copies and replays of earlier postbacks, some in the same chunk as their original, some in another.
        let copies = [3, 70, 130, 200].map { traffic[$0] } + [traffic[5], traffic[5]]
        traffic.insert(copies[0], at: 4)
        traffic.insert(copies[1], at: 140)
        traffic.insert(copies[2], at: 131)
        traffic.append(copies[3])
        traffic.insert(contentsOf: copies[4...], at: 66)
        var batchDispositions: [Disposition] = []
        var singleDispositions: [Disposition] = []
        var answers: [[String]] = []
        for oneBatch in [true, false] {
            let store = try engine.freshStore()
            _ = try await store.schemas.put(app: 1108187390, document: try ExampleSchema.document("game"))
            try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all"))
            if oneBatch {
                batchDispositions = try store.ledger.persist(traffic)
            } else {
                singleDispositions = try traffic.flatMap { try store.ledger.persist([$0]) }
            }
            answers.append(try await Self.contents(store))
        }
        #expect(traffic.count == 246)
        #expect(batchDispositions == singleDispositions)
        #expect(batchDispositions.filter { $0 == .duplicate }.count >= 4)
        #expect(answers[0] == answers[1])
        #expect(answers[0].contains { $0.hasPrefix("\"postback\"|") && $0.split(separator: "|")[9] == "1" })
    }

    /// Copies judged together (``CopyJudgement``) give what one copy per transaction gives, where a batch holds copies
    /// of an unverifiable postback already folded into the rollup, the verified copy that replaces it, copies of each,
    /// and more copies of one postback than are kept: the counters and kept receipts below are counted by hand from the
    /// sequence, and the rollup (moved by the copies' counters, on PostgreSQL after locking its rows in key order) still
    /// answers what scanning the rows answers.
    @Test(arguments: TestEngine.allCases) func copiesInOneBatchAreJudgedInOrder(engine: TestEngine) async throws {
        let pinned = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "t/0", key: pinned.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        let start = try #require(Timestamp.parse("2026-11-01T00:00:00Z"))
        func intake(_ body: [UInt8], _ index: Int) -> Intake {
            let result = verifier.verify(body)
            return Intake(receivedAt: start.addingTimeInterval(Double(index)), remoteAddress: nil, route: .aak, body: body, result: result,
                          decision: TrustPolicy().decide(result))
        }
        func aak(_ id: String, conversionValue: Int = 1, signer: ECPrivateKey? = nil, keyID: String = "t/0") throws -> [UInt8] {
            var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
            fields.conversionValue = conversionValue
            return try Mint.aak(fields, key: signer ?? pinned, keyID: keyID)
        }
        let stranger = try ECPrivateKey.generate()
        let unverifiable = try aak("U", signer: stranger, keyID: "unknown/9")
        let genuine = try aak("U")
        let other = try aak("M")
        var bodies = [unverifiable, unverifiable, genuine, genuine, unverifiable, try aak("U", conversionValue: 2), other]
        bodies += Array(repeating: other, count: Int(PostbackLedger.copiesKept) + 5)
        let traffic = bodies.enumerated().map { intake($1, $0) }
        // The originals first, folded; then the copies.
        let originals = [traffic[0], traffic[6]]
        let copies = traffic.indices.filter { ![0, 6].contains($0) }.map { traffic[$0] }
        var dispositions: [[Disposition]] = []
        var answers: [[String]] = []
        var counters: [[[Int64]]] = []
        for oneBatch in [true, false] {
            let store = try engine.freshStore()
            #expect(try store.ledger.persist(originals) == [.stored, .stored])
            try store.rollup.fold()
            dispositions.append(oneBatch ? try store.ledger.persist(copies) : try copies.flatMap { try store.ledger.persist([$0]) })
            try await RollupTests.expectAgreement(store, oneBatch ? "copies in one batch" : "copies one per transaction")
            answers.append(try await Self.contents(store))
            let rows = try await store.rows("SELECT p.outcome, p.duplicates, p.replays, p.unverified_copies, "
                                            + "(SELECT count(*) FROM receipts r WHERE r.postback_id = p.id) AS kept FROM postbacks p ORDER BY p.id")
            #expect(try rows.map { try $0.get("outcome", as: String.self) } == ["verified", "verified"])
            counters.append(try rows.map { row in
                [try row.get("duplicates"), try row.get("replays"), try row.get("unverified_copies"), try row.get("kept")]
            })
        }
        #expect(dispositions[0] == [.duplicate, .stored, .duplicate, .unverifiedCopy, .replay]
                + Array(repeating: .duplicate, count: Int(PostbackLedger.copiesKept) + 5))
        #expect(dispositions[0] == dispositions[1])
        #expect(answers[0] == answers[1])
        // U: one duplicate while unverifiable, then replaced; a duplicate, an unverified copy and a replay of the verified
        // row; every copy's receipt kept. M: 105 duplicates, 100 receipts kept.
        let copiesKept = PostbackLedger.copiesKept
        #expect(counters[0] == [[2, 1, 1, 4], [copiesKept + 5, 0, 0, copiesKept]])
        #expect(counters[0] == counters[1])
    }

    /// On PostgreSQL a batch inserts its new rows in dedup-key order, whatever order they arrived in (found by a
    /// lock-order review): an insert holds its key until the transaction ends, so two receivers' batches holding the
    /// same two new postbacks in opposite orders each took one key and waited for the other's, a deadlock the server
    /// breaks only after a second by aborting one. The rows' ids still follow arrival order, on both engines, so
    /// listings oldest first (by id) are in the order postbacks came.
    @Test(arguments: TestEngine.allCases) func aBatchInsertsItsNewRowsInKeyOrderAndNumbersThemInArrivalOrder(engine: TestEngine) async throws {
        let traffic = try EngineEqualityTests.traffic(count: 60)
        func key(_ intake: Intake) -> String { intake.result.postback?.dedupKey ?? "" }
        // Arrived in descending key order, with a copy of the first after it: the first of a key is the one stored.
        var batch = traffic.filter { $0.row != nil }.sorted { key($0) > key($1) }
        batch.insert(batch[0], at: 2)
        var arrived: [String] = []
        for intake in batch where !arrived.contains(key(intake)) { arrived.append(key(intake)) }
        let store = try engine.freshStore()
        if engine == .postgres {
            // A row trigger that fires before each insert (and before its conflict check) records the order.
            try store.engine.transaction { db in
                try db.execute("CREATE TABLE insert_order (n serial PRIMARY KEY, dedup_key text NOT NULL)", [])
                try db.execute("CREATE FUNCTION record_insert_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                               + "INSERT INTO insert_order (dedup_key) VALUES (NEW.dedup_key); RETURN NEW; END $$", [])
                try db.execute("CREATE TRIGGER record_insert_order BEFORE INSERT ON postbacks FOR EACH ROW EXECUTE FUNCTION record_insert_order()", [])
            }
        }
        let dispositions = try store.ledger.persist(batch)
        #expect(dispositions[0] == .stored && dispositions[2] == .duplicate)
        #expect(arrived.count > 40)
        #expect(try await store.column("SELECT dedup_key FROM postbacks ORDER BY id", as: String.self) == arrived)
        if engine == .postgres {
            // The keys are ASCII, so their byte order (`COLLATE "C"`) is `String`'s. The later copy is held for the
            // transaction that judges it, never tried as a new row.
            let inserted = try await store.column("SELECT dedup_key FROM insert_order ORDER BY n", as: String.self)
            #expect(inserted == arrived.sorted())
        }
    }

    /// On PostgreSQL a batch is one statement that commits itself (`ingest_batch`, called outside a transaction): it
    /// stores every intake but the copies of stored postbacks and of earlier ones in the batch, which it holds for a
    /// transaction that judges them; it stores nothing when the catalogue is not of the version the batch was decoded
    /// with.
    @Test func aBatchCommitsInOneStatementAndHoldsItsCopiesForATransaction() async throws {
        let store = try TestEngine.postgres.freshStore()
        let (ledger, catalog) = (store.ledger, store.ledger.catalog)
        var keys = Set<String>()
        let batch = try EngineEqualityTests.traffic(count: 60).filter { $0.row != nil && keys.insert($0.result.postback?.dedupKey ?? "").inserted }
        #expect(batch.count >= 20)
        let schemas = try store.engine.transaction { db in try catalog.refresh(db) }
        func call(_ intakes: [Intake], expected: Int64?) throws -> [Disposition?]? {
            try store.engine.autocommit { db in
                try PostbackLedger.persistCommitting(intakes, db, schemas: schemas, receiptIDs: ledger.receiptIDs, expected: expected, catalog: catalog)
            }?.dispositions
        }
        func counts() async throws -> [Int64] {
            try await ["postbacks", "receipts", "rollup_pending"].asyncMap { try await store.scalar("SELECT count(*) FROM \($0)", as: Int64.self) ?? -1 }
        }
        let stored = [Disposition?](repeating: .stored, count: 5)

        #expect(try call(Array(batch[0..<5]), expected: schemas.version) == stored)
        #expect(try await counts() == [5, 5, 5])
        // A copy of a stored postback and one of a postback earlier in the batch are held, their receipts too.
        #expect(try call(Array(batch[5..<10]) + [batch[0], batch[7]], expected: schemas.version) == stored + [nil, nil])
        #expect(try await counts() == [10, 10, 10])
        // A catalogue of another version: nothing stored.
        #expect(throws: SchemaCatalog.Changed.self) { try call(Array(batch[10..<15]), expected: (schemas.version ?? 0) + 1) }
        #expect(try await counts() == [10, 10, 10])
        // The ledger judges the held copies in a transaction after.
        #expect(try ledger.persist([batch[10], batch[0], batch[11], batch[10]]) == [.stored, .duplicate, .stored, .duplicate])
        #expect(try await counts().prefix(2) == [12, 14])
        let dispositions = try await store.column("SELECT disposition FROM receipts ORDER BY id", as: String.self)
        #expect(dispositions.suffix(4) == ["stored", "duplicate", "stored", "duplicate"])
    }

    /// A postback another batch is storing at the same time: the statement's insert waits for that batch, finds the key
    /// taken when it commits, and holds the postback as a copy, judged after in a transaction.
    @Test func aBatchThatMeetsAnotherStoringTheSameNewPostbackHoldsItAsACopy() async throws {
        let store = try TestEngine.postgres.freshStore()
        let (ledger, catalog) = (store.ledger, store.ledger.catalog)
        var keys = Set<String>()
        let batch = try EngineEqualityTests.traffic(count: 20).filter { $0.row != nil && keys.insert($0.result.postback?.dedupKey ?? "").inserted }
        let schemas = try store.engine.transaction { db in try catalog.refresh(db) }
        let (inserted, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let pids = NIOLockedValueBox<(other: Int64?, this: Int64?)>((nil, nil))
        // The other batch stores batch[0] and holds its transaction open until released.
        async let other: [Disposition] = Blocking.run {
            try store.engine.transaction { db in
                let dispositions: [Disposition]
                do {
                    dispositions = try PostbackLedger.persist([batch[0]], db, schemas: schemas, receiptIDs: ledger.receiptIDs)
                    let pid = try db.value("SELECT pg_backend_pid()", as: Int64.self)
                    pids.withLockedValue { $0.other = pid }
                } catch {
                    // This batch must not wait for ever.
                    inserted.signal()
                    throw error
                }
                inserted.signal()
                release.wait()
                return dispositions
            }
        }
        // Sent once the other batch's row is in, not committed.
        async let this: PostbackLedger.CommittedBatch? = Blocking.run {
            try store.engine.autocommit { db in
                let pid = try db.value("SELECT pg_backend_pid()", as: Int64.self)
                pids.withLockedValue { $0.this = pid }
                inserted.wait()
                return try PostbackLedger.persistCommitting([batch[1], batch[0]], db, schemas: schemas, receiptIDs: ledger.receiptIDs,
                                                            expected: schemas.version, catalog: catalog)
            }
        }
        // Released once this statement waits for the other batch (both sessions' pids known first: on a loaded machine
        // the second session can take a while to start, which a count of polls mistook for never).
        let waited = try await eventually(within: 60) {
            let (otherPID, thisPID) = pids.withLockedValue { $0 }
            guard let otherPID, let thisPID else { return false }
            return try await store.scalar("SELECT ?::bigint = ANY(pg_blocking_pids(?::int))", [otherPID, thisPID], as: Bool.self) ?? false
        }
        release.signal()
        #expect(waited)
        #expect(try await other == [.stored])
        #expect(try await this?.dispositions == [.stored, nil])
        #expect(try await store.scalar("SELECT count(*) FROM receipts", as: Int64.self) == 2)
        #expect(try ledger.persist([batch[0]]) == [.duplicate])
    }

    /// The procedure's frozen text names the row's columns and the forwarding rules' match as the code does today: a
    /// change to either needs a migration that replaces it.
    @Test func theBatchProcedureNamesTheColumnsAndTheForwardingMatchOfTheCode() async throws {
        let store = try TestEngine.postgres.freshStore()
        let text = try #require(try await store.scalar("SELECT prosrc FROM pg_proc WHERE proname = 'ingest_batch'", as: String.self))
        func words(_ sql: String) -> String { sql.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        #expect(words(text).contains("INSERT INTO postbacks (id, \(PostbackRow.insertColumns.joined(separator: ", ")))"))
        #expect(words(text).contains("JOIN forward_rules r ON \(words(ForwardingOutbox.matches(row: "p"))) AND r.is_full = 0"))
    }

    /// When the transaction of the held copies fails after the statement committed the rest, what was committed is
    /// told apart from what failed: those callers are answered, and only the copies' callers get the error.
    @Test func aBatchWhoseCopiesFailAfterItsStatementCommittedSaysWhatWasStored() async throws {
        let store = try TestEngine.postgres.freshStore()
        let intake = try #require(try EngineEqualityTests.traffic(count: 10).first { $0.row != nil })
        try Self.refuseDuplicates(store)
        do {
            let dispositions = try store.ledger.persist([intake, intake])
            Issue.record("the copy's transaction should have failed, not \(dispositions)")
        } catch let partly as PostbackLedger.PartlyStored {
            #expect(partly.dispositions == [.stored, nil])
        }
        #expect(try await store.column("SELECT disposition FROM receipts", as: String.self) == ["stored"])
        #expect(try await store.scalar("SELECT count(*) FROM postbacks", as: Int64.self) == 1)
    }

    /// Through the writer, a batch stored in part answers each caller by what happened to its own postback: the one the
    /// statement committed gets its disposition, only the copy whose transaction failed gets the error, and the failed
    /// commit shows in the metrics and in readiness until the next commit succeeds.
    @Test func theWriterAnswersTheStoredCallersOfABatchStoredInPart() async throws {
        let store = try TestEngine.postgres.freshStore()
        let intakes = try EngineEqualityTests.traffic(count: 10).filter { $0.row != nil }
        let intake = try #require(intakes.first)
        let other = try #require(intakes.first { $0.result.postback?.dedupKey != intake.result.postback?.dedupKey })
        try Self.refuseDuplicates(store)
        let metrics = TestMetrics()
        let writer = GroupCommitWriter(database: store, metrics: metrics)
        let depth = try metrics.expectGauge("countersign_commit_queue_depth")
        // Waits until the writer's queue has held `count` intakes (a count of turns mistook a loaded machine for never).
        func queued(_ count: Int) async -> Bool {
            await eventually(within: 60) { depth.values.contains(Double(count)) }
        }
        @Sendable func submitted() async -> Result<Disposition, any Error> {
            do { return .success(try await writer.submit(intake)) } catch { return .failure(error) }
        }
        // The postback first, then its copy, both queued before the writer starts, so they share its first batch in
        // that order: the statement stores the first and holds the copy, whose transaction the trigger makes fail.
        let first = Task { await submitted() }
        #expect(await queued(1))
        let copy = Task { await submitted() }
        #expect(await queued(2))
        let (stored, failed) = try await withRunningWriter(writer) {
            let outcomes = (await first.value, await copy.value)
            #expect(!writer.isHealthy)
            let next = try await writer.submit(other)
            #expect(next == .stored)
            #expect(writer.isHealthy)
            return outcomes
        }
        #expect(try metrics.expectRecorder("countersign_commit_batch_size").values.first == 2)
        #expect(try stored.get() == .stored)
        #expect(throws: (any Error).self) { try failed.get() }
        if case .failure(let error) = failed {
            #expect(!(error is PostbackLedger.PartlyStored))
            #expect(String(describing: error).contains("duplicates refused"))
        }
        #expect(try metrics.expectCounter("countersign_commit_failures_total").totalValue == 1)
        #expect(try await store.column("SELECT disposition FROM receipts", as: String.self) == ["stored", "stored"])
        #expect(try await store.scalar("SELECT count(*) FROM postbacks", as: Int64.self) == 2)
    }

    /// Makes PostgreSQL refuse every receipt of a duplicate, so the transaction that judges copies fails.
    static func refuseDuplicates(_ store: StoreDatabase) throws {
        try store.engine.transaction { db in
            try db.execute("CREATE FUNCTION refuse_duplicates() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                           + "IF NEW.disposition = 'duplicate' THEN RAISE EXCEPTION 'duplicates refused'; END IF; RETURN NEW; END $$", [])
            try db.execute("CREATE TRIGGER refuse_duplicates BEFORE INSERT OR UPDATE ON receipts FOR EACH ROW EXECUTE FUNCTION refuse_duplicates()", [])
        }
    }

    /// The catalogue changes between the statement that stored a batch and the transaction of its copies: only the
    /// copies run again, after the reload, and what the statement stored is stored once.
    @Test func aCatalogueChangeBeforeTheCopiesRunsOnlyTheCopiesAgain() async throws {
        let store = try TestEngine.postgres.freshStore()
        let intake = try #require(try EngineEqualityTests.traffic(count: 10).first { $0.row != nil })
        let lane = CatalogueChangingLane(engine: store.engine)
        #expect(try store.ledger.persist([intake, intake], through: lane) == [.stored, .duplicate])
        #expect(lane.statements == 1 && lane.transactions == 3)
        #expect(try await store.column("SELECT disposition FROM receipts ORDER BY id", as: String.self) == ["stored", "duplicate"])
        #expect(try await store.scalar("SELECT duplicates FROM postbacks", as: Int64.self) == 1)
    }

    /// A lane that raises the catalogue's version before its first transaction after a statement, as an upload through
    /// another receiver would; it counts what it ran.
    final class CatalogueChangingLane: TransactionLane {
        let engine: any DatabaseEngine
        private(set) var statements = 0, transactions = 0
        init(engine: any DatabaseEngine) { self.engine = engine }
        func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T {
            statements += 1
            return try engine.autocommit(body)
        }
        func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T {
            if statements > 0, transactions == 0 {
                try engine.transaction { db in _ = try db.execute("UPDATE schema_catalogue_version SET version = version + 1", []) }
            }
            transactions += 1
            return try engine.transaction(body)
        }
        func idle() {}
        func close() {}
    }

    /// SQLite's values are bound through its C functions: what goes in comes back, empty text and bytes are not NULL,
    /// and a statement given the wrong number of values is refused, not run.
    @Test(arguments: TestEngine.allCases) func valuesRoundTrip(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let values: [SQLValue] = [.text(""), .blob([]), .text("é ✓ \u{1F600}"), .integer(Int64.min), .integer(Int64.max), .real(-0.25),
                                  .blob([0, 255, 0]), .null]
        let back = try await store.engine.read { db in
            try db.rows("SELECT ?, ?, ?, ?, ?, ?, ?, ?", values, reuse: .once)
        }
        #expect(back.count == 1)
        #expect(back.first?.values == values)
        await #expect(throws: (any Error).self) {
            try await store.engine.read { db in try db.rows("SELECT ?, ?", [SQLValue.integer(1)], reuse: .once) }
        }
    }
}
