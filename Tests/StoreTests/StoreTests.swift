import CountersignServer
import Foundation
import Synchronization
import GRDB
import MetricsTestKit
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

@Suite struct StoreTests {
    static let key = try! ECPrivateKey.generate()
    static let stranger = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))

    func intake(_ body: [UInt8]) -> Intake {
        let result = verifier.verify(body)
        return Intake(receivedAt: Date(), remoteAddress: "127.0.0.1:1", route: .any, body: body, result: result, decision: TrustPolicy().decide(result))
    }

    func aak(_ id: String, country: String? = nil, keyID: String = "net/0", key: ECPrivateKey = key) throws -> [UInt8] {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
        fields.countryCode = country
        return try Mint.aak(fields, key: key, keyID: keyID)
    }

    @Test(arguments: TestEngine.allCases) func firstCopyCountsRepeatsAreDuplicatesOrReplays(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let original = try aak("A")
        let dispositions = try store.ledger.persist([intake(original), intake(original), intake(try aak("A", country: "GB")), intake(Array("{}".utf8))])
        #expect(dispositions == [.stored, .duplicate, .replay, .rejected])
        let row = try #require(try await store.rows("SELECT count(*) AS n, sum(duplicates) AS d, sum(replays) AS r, sum(countable) AS c FROM postbacks").first)
        #expect(try row.get("n", as: Int.self) == 1)
        #expect(try row.get("d", as: Int.self) == 1)
        #expect(try row.get("r", as: Int.self) == 1)
        #expect(try row.get("c", as: Int.self) == 1)
        let receipts = try await store.column("SELECT disposition FROM receipts ORDER BY id", as: String.self)
        #expect(receipts == ["stored", "duplicate", "replay", "rejected"])
    }

    @Test(arguments: TestEngine.allCases) func verifiedCopyReplacesAnUnverifiableForgery(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let forged = try aak("B", keyID: "unknown/0", key: Self.stranger)
        let genuine = try aak("B")
        #expect(try store.ledger.persist([intake(forged)]) == [.stored])
        #expect(try store.ledger.persist([intake(genuine)]) == [.stored])
        let outcome = try await store.scalar("SELECT outcome || ':' || countable FROM postbacks WHERE dedup_key = ?", ["aak:" + Mint.uuid("B")], as: String.self)
        #expect(outcome == "verified:1")
    }

    @Test(arguments: TestEngine.allCases) func reverifyPromotesWhenTheKeyArrives(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let later = try ECPrivateKey.generate()
        _ = try store.ledger.persist([intake(try aak("C", keyID: "later/0", key: later)), intake(try aak("D", keyID: "never/0", key: Self.stranger))])
        let updated = PostbackVerifier(keyRing: try verifier.keyRing.adding([
            KeyEntry(keyID: "later/0", key: later.publicKey, environment: .production, usages: [.aak], origin: "test"),
        ]))
        let summary = try await store.ledger.reverify { _, body in
            let result = updated.verify(body)
            return (result, TrustPolicy().decide(result))
        }
        #expect(summary.checked == 2)
        #expect(summary.promoted == 1)
        #expect(summary.stillUnverifiable == 1)
        let rows = try await store.column("SELECT dedup_key || '=' || outcome || ':' || countable FROM postbacks ORDER BY dedup_key", as: String.self)
        #expect(Set(rows) == ["aak:\(Mint.uuid("C"))=verified:1", "aak:\(Mint.uuid("D"))=unverifiable:0"])
    }

    /// Callers waiting together share one transaction: 200 submissions queued before the writer runs are committed in
    /// a single batch (its metrics say so), every caller answered with its own disposition.
    @Test(arguments: TestEngine.allCases) func groupCommitSharesTransactionsAndAnswersEveryCaller(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let metrics = TestMetrics()
        let writer = GroupCommitWriter(database: store, metrics: metrics)
        let bodies = try (0..<200).map { try aak("G\($0 % 150)") }
        let depth = try metrics.expectGauge("countersign_commit_queue_depth")
        // Past 128 stored postbacks the writer folds them into the report rollup, and it folds the rest when it stops.
        let dispositions = try await withThrowingTaskGroup(of: Disposition.self) { group in
            for body in bodies { group.addTask { try await writer.submit(intake(body)) } }
            // Every submission is queued (the writer records the depth as each arrives; two may record out of order)
            // before the writer starts.
            while !depth.values.contains(Double(bodies.count)) { await Task.yield() }
            return try await withRunningWriter(writer) {
                var all: [Disposition] = []
                for try await disposition in group { all.append(disposition) }
                let stored = try await store.scalar("SELECT count(*) FROM postbacks", as: Int.self)
                #expect(stored == 150)
                return all
            }
        }
        #expect(try metrics.expectRecorder("countersign_commit_batch_size").values == [200])
        #expect(try metrics.expectTimer("countersign_commit_seconds").values.count == 1)
        #expect(dispositions.filter { $0 == .stored }.count == 150)
        #expect(dispositions.filter { $0 == .duplicate }.count == 50)
        // Everything is folded: the live view adds nothing to the rollup table.
        let rolledUp = try await store.scalar("SELECT sum(postbacks) FROM conversion_rollup", as: Int.self)
        let live = try await store.scalar("SELECT sum(postbacks) FROM conversion_rollup_live", as: Int.self)
        #expect(rolledUp == 150)
        #expect(live == 150)
    }

    /// Finding 1 of trust round 4: the first schema for an app with stored postbacks decoded its backlog in 1,000-row
    /// transactions back to back, and ingest fell about 40-fold until it was done. Ingest's rate while the backlog
    /// decodes, against its rate alone, one postback at a time through the writer as a device's arrive: printed, and
    /// held to a floor far below the goal's 0.5 (a debug build on a shared machine), far above the 0.03 it was.
    /// The backlog yields the writer between its transactions, so a postback submitted while it decodes is stored
    /// before the backlog ends; if the backlog held the writer, the postback would wait out the whole decode.
    /// (`scripts/bench-background` measures the rate ingest keeps.)
    @Test(arguments: TestEngine.allCases) func ingestGoesOnWhileASchemaBacklogDecodes(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let app: AppID = 10738027756
        _ = try store.ledger.persist(try (0..<400).map { intake(try aak("backlog-\($0)")) })
        #expect(try await store.ledger.waitingForDecoding(app: app) == 400)
        // Folded now, so the writer's fold at start holds none of these rows while the backlog decodes (on PostgreSQL
        // the decoding passes over rows another transaction holds; `serve` takes them in its next round).
        while try store.rollup.fold(limit: 50_000) > 0 {}
        let writer = GroupCommitWriter(database: store, metrics: TestMetrics())
        try await withRunningWriter(writer) {
            guard case .stored = try await store.schemas.put(app: app, document: try ExampleSchema.document("shop")) else {
                throw KeyError("schema not stored")
            }
            // 400 postbacks decode in 16 transactions of 25 (the backlog's batch), each followed by a pause for the
            // writer's other callers: longer than the backlog's own, so the test sees a pause whatever the machine's speed.
            let pace = WritePace(batch: PostbackLedger.backlogPace.batch, idleRatio: 10)
            let backlog = Task { try await store.ledger.decodeBacklog(app: app, pace: pace) }
            let begun = try await eventually(within: 60) { try await store.ledger.waitingForDecoding(app: app) < 400 }
            #expect(begun, "the backlog did not begin")
            #expect(try await writer.submit(intake(try aak("during"))) == .stored)
            let left = try await store.ledger.waitingForDecoding(app: app)
            #expect(left > 0, "the postback was stored only once the backlog had decoded")
            #expect(try await backlog.value == 400)
        }
        #expect(try await store.ledger.waitingForDecoding(app: app) == 0)
    }

    @Test func lockedDatabaseFailsTheCommitInsteadOfAcknowledging() async throws {
        let path = try TestEngine.sqlite.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: .sqlite(path: path), busyTimeout: 0.1))
        let writer = GroupCommitWriter(database: store, metrics: TestMetrics())
        var holdsLock = Configuration()
        holdsLock.allowsUnsafeTransactions = true
        // The writer folds the report rollup when it starts, so the other connection may have to wait its turn.
        holdsLock.busyMode = .timeout(5)
        let other = try DatabaseQueue(path: path, configuration: holdsLock)
        try await withRunningWriter(writer) {
            try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
            await #expect(throws: (any Error).self) { try await writer.submit(intake(try aak("L"))) }
            try await other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
            #expect(try await writer.submit(intake(try aak("L"))) == .stored)
        }
    }

    @Test func timestampsSortAndParse() throws {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        #expect(Timestamp.format(date) == "2026-11-18T11:06:40.123Z")
        #expect(Timestamp.parse("2026-11-01").map(Timestamp.format) == "2026-11-01T00:00:00.000Z")
        #expect(Timestamp.parse("yesterday") == nil)
    }

    /// Date filters take a date, a date-time with an offset, or one without seconds (issue 13); no zone means UTC.
    @Test func dateFiltersTakeTheFormsPeopleType() {
        let expected = "2026-11-01T08:30:00.000Z"
        for text in ["2026-11-01T08:30:00Z", "2026-11-01T10:30:00+02:00", "2026-11-01T08:30Z", "2026-11-01T10:30+02:00",
                     "2026-11-01T08:30", "2026-11-01T08:30:00", "2026-11-01 08:30", "2026-11-01T03:30:00-05:00"] {
            #expect(Timestamp.parse(text).map(Timestamp.format) == expected, "\(text)")
        }
        #expect(Timestamp.parse("2026-11-01").map(Timestamp.format) == "2026-11-01T00:00:00.000Z")
        for text in ["2026-11-01T8:30", "2026-13-01", "2026-11-01T08:30:00+2", "2026-11-01T25:00"] {
            #expect(Timestamp.parse(text) == nil, "\(text)")
        }
    }

    /// A schema uploaded while a batch is between its catalogue check and its commit (on PostgreSQL, another receiver's
    /// batch) still gets that batch decoded: the upload waits for batches in flight, and the batch's postback is then
    /// in the app's backlog, which the background decoding (`decodeWaiting`, as `serve` runs it) takes. Found by reading
    /// the code: the upload used to decode only what had committed before it.
    @Test(arguments: TestEngine.allCases) func aSchemaUploadedWhileABatchIsInFlightDecodesThatBatch(engine: TestEngine) async throws {
        let database = try engine.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        // The batch is another receiver's: a store of its own on the same database, with its own catalogue.
        let other = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        var fields = AAKPostbackFields(postbackID: Mint.uuid("in-flight"))
        fields.conversionValue = 7
        fields.sourceIdentifier = "1023"
        let batch = [intake(try Mint.aak(fields, key: Self.key, keyID: "net/0"))]
        let checked = Atomic<Bool>(false)
        let uploaded = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<[Disposition], any Error>?>(nil)
        let ledger = other.ledger
        let writer = Thread {
            let result = Result {
                try ledger.engine.transaction { db in
                    let schemas = try ledger.catalog.refresh(db)
                    checked.store(true, ordering: .sequentiallyConsistent)
                    // The upload may wait for this batch: go on once it is done, or after a while.
                    _ = uploaded.wait(timeout: .now() + 2)
                    return try PostbackLedger.persist(batch, db, schemas: schemas, receiptIDs: ledger.receiptIDs)
                }
            }
            outcome.withLock { $0 = result }
        }
        writer.start()
        while !checked.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(5)) }
        guard case .stored = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop")) else {
            Issue.record("schema not stored"); return
        }
        uploaded.signal()
        while outcome.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(5)) }
        #expect(try outcome.withLock { $0 }?.get() == [.stored])
        #expect(try await store.ledger.waitingForDecoding(app: 10738027756) == 1)
        let step = try await store.ledger.decodeWaiting(app: 10738027756, after: 0, limit: 1_000)
        #expect(step.looked == 1 && step.decoded == 1)
        #expect(try await store.column("SELECT decode_status FROM postbacks", as: String?.self) == ["decoded"])
        #expect(try await store.ledger.waitingForDecoding(app: 10738027756) == 0)
    }
}

/// The analyst views in docs/sql.md answer from the stored rows.
@Suite struct AnalystViewTests {
    @Test(arguments: TestEngine.allCases) func viewsCountFirstCopiesAndMarkUnsignedValues(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        func intake(_ id: String, fine: Int, keyID: String = "net/0", signer: ECPrivateKey? = nil) throws -> Intake {
            var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
            fields.conversionValue = fine
            fields.sourceIdentifier = "1023"
            let body = try Mint.aak(fields, key: signer ?? key, keyID: keyID)
            let result = verifier.verify(body)
            return Intake(receivedAt: Date(), remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result))
        }
        let store = try engine.freshStore()
        guard case .stored = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop")) else {
            Issue.record("schema not stored"); return
        }
        _ = try store.ledger.persist([try intake("V1", fine: 7), try intake("V1", fine: 7), try intake("V2", fine: 1),
                                     try intake("U1", fine: 3, keyID: "other/0", signer: try ECPrivateKey.generate())])
        let conversions = try await store.rows("SELECT postback_identifier, countable, campaign, ad_group, creative, conversion_value_unsigned, revenue_mid, duplicates FROM conversions ORDER BY id")
        #expect(try conversions.map { try $0.get("postback_identifier", as: String.self) } == ["V1", "V2", "U1"].map(Mint.uuid))
        #expect(try conversions.map { try $0.get("countable", as: Int.self) } == [1, 1, 0])
        #expect(try conversions[0].get("campaign", as: String.self) == "10")
        #expect(try conversions[0].get("creative", as: String.self) == "3")
        #expect(try conversions[0].get("conversion_value_unsigned", as: Int.self) == 7)
        #expect(try conversions[0].get("revenue_mid", as: Double.self) == 62.5)
        #expect(try conversions[0].get("duplicates", as: Int.self) == 1)
        let events = try await store.column("SELECT event FROM conversion_events WHERE countable = 1 ORDER BY postback_id", as: String.self)
        #expect(events == ["order", "add_to_cart"])
        let daily = try #require(try await store.rows("SELECT sum(postbacks) AS p, sum(counted) AS c, sum(duplicates) AS d, sum(unverifiable) AS u FROM conversions_daily").first)
        #expect(try daily.get("p", as: Int.self) == 3)
        #expect(try daily.get("c", as: Int.self) == 2)
        #expect(try daily.get("d", as: Int.self) == 1)
        #expect(try daily.get("u", as: Int.self) == 1)
        let report = try await store.reports.report(try ReportQuery.parse([]))
        let totals = Dictionary(uniqueKeysWithValues: zip(report.columns, report.rows[0]))
        #expect(totals["events"] == .number("2"))
        #expect(totals["revenue_min"] == .number("50.00"))
        #expect(totals["currency"] == .string("USD"))
        let byEvent = try await store.reports.report(try ReportQuery.parse([("by", "event")]))
        #expect(byEvent.rows.map { $0[0] } == [.string("add_to_cart"), .string("order")])
    }
}

/// A 200 survives power loss by default (issue 15, item 7): SQLite commits with `synchronous=FULL` unless asked otherwise.
@Suite struct DurabilityDefaultTests {
    @Test func sqliteCommitsWithFullSynchronousByDefault() async throws {
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.sqlite.freshDatabase())))
        defer { store.close() }
        #expect(try await store.scalar("PRAGMA synchronous", as: Int.self) == 2)
        let relaxed = try TestStore.open(StoreSettings(location: try DatabaseLocation(try TestEngine.sqlite.freshDatabase()), durability: .normal))
        defer { relaxed.close() }
        #expect(try await relaxed.scalar("PRAGMA synchronous", as: Int.self) == 1)
    }

}
