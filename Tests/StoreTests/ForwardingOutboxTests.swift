import Foundation
import Testing
import JWS
import MetricsTestKit
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// The forwarding outbox on both engines: written in the postback's own transaction for the rules a verified postback
/// matches, claimed within a partner's concurrency and rate, retried, dead, and put back by an operator.
@Suite struct ForwardingOutboxTests {
    static let key = try! ECPrivateKey.generate()
    static let developmentKey = try! ECPrivateKey.generate()
    static let stranger = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
        KeyEntry(keyID: "dev/0", key: developmentKey.publicKey, environment: .development, usages: [.aak, .skan], origin: "test"),
    ]))

    func intake(_ body: [UInt8]) -> Intake {
        let result = verifier.verify(body)
        return Intake(receivedAt: Date(), remoteAddress: nil, route: .any, body: body, result: result,
                      decision: TrustPolicy(allowDevelopment: true).decide(result))
    }

    func aak(_ id: String, network: String = "net-a.adattributionkit", country: String? = nil, keyID: String = "net/0", key: ECPrivateKey = key) throws -> [UInt8] {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
        fields.adNetworkID = network
        fields.countryCode = country
        return try Mint.aak(fields, key: key, keyID: keyID)
    }

    /// Entries per rule name, as (rule, dedup key) pairs sorted.
    func entries(_ store: StoreDatabase) async throws -> [String] {
        try await store.column("SELECT o.partner || ' ' || p.dedup_key FROM forward_outbox o JOIN postbacks p ON p.id = o.postback_id ORDER BY 1", as: String.self)
    }

    @Test(arguments: TestEngine.allCases) func verifiedPostbacksAreQueuedForTheRulesTheyMatch(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all"))
        try await store.forwarding.set(ForwardRule(name: "net-b", url: "http://127.0.0.1:1/b", adNetwork: "net-b.adattributionkit"))
        try await store.forwarding.set(ForwardRule(name: "dev", url: "http://127.0.0.1:1/dev", environment: .development))
        try await store.forwarding.set(ForwardRule(name: "skan", url: "http://127.0.0.1:1/skan", postbackProtocol: .skan))
        try await store.forwarding.set(ForwardRule(name: "other-app", url: "http://127.0.0.1:1/app", app: 1))
        let genuine = try aak("A")
        let dispositions = try store.ledger.persist([
            intake(genuine), intake(genuine), intake(try aak("A", country: "GB")), intake(try aak("B", network: "net-b.adattributionkit")),
            intake(try aak("C", keyID: "dev/0", key: Self.developmentKey)), intake(try aak("D", keyID: "unknown/0", key: Self.stranger)),
            intake(Array("{}".utf8)),
        ])
        #expect(dispositions == [.stored, .duplicate, .replay, .stored, .stored, .stored, .rejected])
        // A once (its duplicate and replay add nothing), B for both rules it matches, the development postback only for
        // the development rule, the unverifiable forgery for nobody.
        let a = "aak:" + Mint.uuid("A"), b = "aak:" + Mint.uuid("B"), c = "aak:" + Mint.uuid("C")
        #expect(try await entries(store) == ["all \(a)", "all \(b)", "dev \(c)", "net-b \(b)"].sorted())
        // The real postback arrives after the forgery that took its key: it replaces the row and is queued then.
        #expect(try store.ledger.persist([intake(try aak("D"))]) == [.stored])
        #expect(try await entries(store).contains("all aak:" + Mint.uuid("D")))
    }

    @Test(arguments: TestEngine.allCases) func reverifyQueuesWhatItPromotes(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all"))
        let later = try ECPrivateKey.generate()
        _ = try store.ledger.persist([intake(try aak("E", keyID: "later/0", key: later))])
        #expect(try await entries(store).isEmpty)
        let updated = PostbackVerifier(keyRing: try verifier.keyRing.adding([
            KeyEntry(keyID: "later/0", key: later.publicKey, environment: .production, usages: [.aak], origin: "test"),
        ]))
        let summary = try await store.ledger.reverify { _, body in
            let result = updated.verify(body)
            return (result, TrustPolicy().decide(result))
        }
        #expect(summary.promoted == 1)
        #expect(try await entries(store) == ["all aak:" + Mint.uuid("E")])
    }

    @Test(arguments: TestEngine.allCases) func theOutboxAndThePostbackCommitTogether(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all"))
        // Any failure writing the outbox (here a trigger) must undo the postback and its receipt too.
        try store.engine.transaction { db in try RefusingTrigger.install(on: "forward_outbox", message: "outbox refused", db) }
        #expect(throws: (any Error).self) { try store.ledger.persist([intake(try aak("F"))]) }
        #expect(try await store.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 0)
        #expect(try await store.scalar("SELECT count(*) FROM receipts", as: Int.self) == 0)
    }

    @Test(arguments: TestEngine.allCases) func claimsKeepThePartnersConcurrencyAndRate(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "narrow", url: "http://127.0.0.1:1/n", concurrency: 2, rate: 1000))
        try await store.forwarding.set(ForwardRule(name: "slow", url: "http://127.0.0.1:1/s", concurrency: 50, rate: 2))
        _ = try store.ledger.persist(try (0..<5).map { intake(try aak("G\($0)")) })
        let now = Date()
        let first = try await store.forwarding.claim(partner: "narrow", limit: 10, now: now)
        #expect(first.count == 2)
        #expect(try await store.forwarding.claim(partner: "narrow", limit: 10, now: now).isEmpty)
        #expect(try await store.forwarding.delivered([first[0]], now: now) == [true])
        let next = try await store.forwarding.claim(partner: "narrow", limit: 10, now: now)
        #expect(next.count == 1)
        #expect(Set((first + next).map(\.id)).count == 3)
        // Two a second, in bursts of at most one second's worth.
        #expect(try await store.forwarding.claim(partner: "slow", limit: 10, now: now).count == 2)
        #expect(try await store.forwarding.claim(partner: "slow", limit: 10, now: now).isEmpty)
        #expect(try await store.forwarding.claim(partner: "slow", limit: 10, now: now.addingTimeInterval(0.5)).count == 1)
        #expect(try await store.forwarding.claim(partner: "slow", limit: 10, now: now.addingTimeInterval(10)).count == 2)
    }

    /// A claim counts the partner's live claims from an index of them and reads the entries it took by id: walking every
    /// pending entry, or every entry for the claim's id, made draining a backlog of N entries cost N² (each claim of a
    /// few read the whole backlog).
    @Test func aClaimCountsTheLiveClaimsWithoutWalkingTheBacklog() async throws {
        let store = try TestEngine.sqlite.freshStore()
        defer { store.close() }
        let plan = try await store.rows("EXPLAIN QUERY PLAN " + ForwardingOutbox.liveClaimsSQL, ["p", 0.0]).map { try $0.get("detail", as: String.self) }
        #expect(plan.count == 1)
        #expect(plan.first?.contains("USING INDEX forward_outbox_claimed (partner=? AND claimed_until>?)") == true, "\(plan)")
        // The entries it took are then found by id, not by the claim's id (which no index holds).
        let entries = try await store.rows("EXPLAIN QUERY PLAN " + ForwardingOutbox.claimedEntriesSQL(count: 2), [1, 2]).map { try $0.get("detail", as: String.self) }
        #expect(entries.contains { $0.contains("SEARCH o USING INTEGER PRIMARY KEY (rowid=?)") }, "\(entries)")
        #expect(!entries.contains { $0.hasPrefix("SCAN") }, "\(entries)")
        // Deliveries recorded are deleted by id too: their (id, claim) pairs alone made SQLite read the whole outbox.
        let answered = [1, 2].map { id in
            ForwardDelivery(id: id, partner: "p", url: "http://127.0.0.1:1/p", timeout: 1, postbackID: id, dedupKey: "k\(id)", body: [], header: nil,
                            attempts: 0, deadline: Date(), claimID: "c")
        }
        let delete = ForwardingOutbox.deleteDeliveredSQL(answered, .sqlite)
        let deletes = try await store.rows("EXPLAIN QUERY PLAN " + delete.sql, delete.arguments).map { try $0.get("detail", as: String.self) }
        #expect(deletes.contains { $0.contains("SEARCH forward_outbox USING INTEGER PRIMARY KEY (rowid=?)") }, "\(deletes)")
        #expect(!deletes.contains { $0.hasPrefix("SCAN forward_outbox") }, "\(deletes)")
    }

    /// On PostgreSQL a claim and the queues' read walk the partner's due index in its order and stop at what they
    /// take: the index lacked the id the claim orders by, so each claim sorted every pending entry of the partner and
    /// draining a backlog of N cost N² (SQLite's index holds the rowid; the test above reads its plan).
    @Test func onPostgreSQLAClaimWalksThePartnersDueIndexInOrder() async throws {
        let store = try TestEngine.postgres.freshStore()
        defer { store.close() }
        let plans = try store.engine.transaction { db -> [String] in
            // With sorting and whole-table reads priced out, a plan that still sorts has no index that gives the order.
            try db.execute("SET LOCAL enable_sort = off", [])
            try db.execute("SET LOCAL enable_seqscan = off", [])
            let claim = try db.rows("EXPLAIN " + ForwardingOutbox.claimSQL, ["c", 1.0, "p", 1.0, 1.0, 8]).map { try $0.get("QUERY PLAN", as: String.self) }
            let queues = try db.rows("EXPLAIN " + ForwardingOutbox.queuesSQL, [1.0]).map { try $0.get("QUERY PLAN", as: String.self) }
            return claim + queues
        }
        #expect(!plans.contains { $0.contains("Sort") }, "\(plans)")
        #expect(plans.filter { $0.contains("using forward_outbox_due on forward_outbox") }.count == 2, "\(plans)")
    }

    @Test(arguments: TestEngine.allCases) func theClaimedBodyIsTheOneReceived(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all"))
        // Members in an unusual order and spacing: the partner gets these bytes, not a re-serialisation.
        let body = Array(String(decoding: try aak("H"), as: UTF8.self).replacingOccurrences(of: ",", with: " , ").utf8)
        #expect(try store.ledger.persist([intake(body)]) == [.stored])
        let claimed = try await store.forwarding.claim(partner: "all", limit: 10, now: Date())
        #expect(claimed.map(\.body) == [body])
        #expect(claimed.map(\.dedupKey) == ["aak:" + Mint.uuid("H")])
        #expect(claimed.map(\.url) == ["http://127.0.0.1:1/all"])
    }

    @Test(arguments: TestEngine.allCases) func failuresAreRetriedThenDeadThenRetriedByAnOperator(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "down", url: "http://127.0.0.1:1/d", maximumAge: 60))
        _ = try store.ledger.persist([intake(try aak("I"))])
        let now = Date()
        let claimed = try #require(try await store.forwarding.claim(partner: "down", limit: 1, now: now).first)
        #expect(claimed.deadline.timeIntervalSince(now) > 55)
        #expect(try await store.forwarding.failed(claimed, answer: "500", error: "HTTP 500", decision: .retry(at: now.addingTimeInterval(30)), now: now))
        #expect(try await store.forwarding.claim(partner: "down", limit: 1, now: now.addingTimeInterval(29)).isEmpty)
        let again = try #require(try await store.forwarding.claim(partner: "down", limit: 1, now: now.addingTimeInterval(31)).first)
        #expect(again.attempts == 1)
        #expect(try await store.forwarding.failed(again, answer: "refused", error: "connection refused", decision: .dead, now: now.addingTimeInterval(31)))
        #expect(try await store.forwarding.claim(partner: "down", limit: 1, now: now.addingTimeInterval(3600)).isEmpty)
        let dead = try await store.forwarding.entries(state: .dead, partner: "down", limit: 10)
        #expect(dead.rows.count == 1)
        #expect(dead.rows.first?[try #require(dead.columns.firstIndex(of: "last_answer"))] == .string("refused"))
        #expect(dead.rows.first?[try #require(dead.columns.firstIndex(of: "attempts"))] == .number("2"))
        let status = try await store.forwarding.status()
        #expect(status.rows.first?[try #require(status.columns.firstIndex(of: "dead"))] == .number("1"))
        #expect(try await store.forwarding.retry(partner: "down", ids: []) == 1)
        let later = Date()
        let revived = try #require(try await store.forwarding.claim(partner: "down", limit: 1, now: later).first)
        #expect(revived.deadline.timeIntervalSince(later) > 55, "a retried dead letter gets a fresh deadline")
        #expect(try await store.forwarding.delivered([revived]) == [true])
        #expect(try await store.forwarding.entries(state: .dead, partner: nil, limit: 10).rows.isEmpty)
    }

    /// Partners' answers that arrive while a transaction records share the next one: with the rule's row held by
    /// another transaction (on SQLite, the one writer), twenty deliveries and a lapsed claim's attempt are recorded in
    /// two transactions, the first alone and the twenty that waited behind it together, each caller told its own
    /// outcome (the lapsed attempt that it recorded nothing).
    @Test(arguments: TestEngine.allCases) func deliveriesAnsweredTogetherShareOneTransaction(engine: TestEngine) async throws {
        let (store, deliveries) = try await claimed(20, of: "R", engine)
        let lapsed = deliveries[7].lapsed()
        let metrics = TestMetrics()
        let recorder = DeliveryRecorder(outbox: store.forwarding, metrics: metrics)
        let outcomes = try await Self.recordBehindAHeldRow(deliveries[0], Array(deliveries.dropFirst()) + [lapsed], store, recorder, metrics)
        #expect(try outcomes.map { try $0.get() } == Array(repeating: true, count: 20) + [false], "every caller is told its own outcome")
        #expect(try metrics.expectRecorder("countersign_forward_record_batch_size").values == [1, 20])
        #expect(try metrics.expectGauge("countersign_forward_record_queue_depth").values.last == 0, "nothing waits once the last transaction took them")
        let status = try await store.forwarding.status()
        #expect(status.rows.first?[try #require(status.columns.firstIndex(of: "delivered"))] == .number("20"))
        #expect(try await store.scalar("SELECT count(*) FROM forward_outbox", as: Int.self) == 0)
    }

    /// A transaction that fails answers every caller in it with its error, records none of them (their claims lapse
    /// and they are delivered again), and the next answer leads a transaction of its own.
    @Test(arguments: TestEngine.allCases) func aFailedRecordAnswersEveryCallerInItAndTheNextLeads(engine: TestEngine) async throws {
        let (store, deliveries) = try await claimed(6, of: "F", engine)
        let refused = deliveries[2].id
        try store.engine.transaction { db in
            if db.dialect == .postgres {
                try db.execute("CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                               + "IF OLD.id = \(refused) THEN RAISE EXCEPTION 'delete refused'; END IF; RETURN OLD; END $$", [])
                try db.execute("CREATE TRIGGER refuse_delete BEFORE DELETE ON forward_outbox FOR EACH ROW EXECUTE FUNCTION refuse_delete()", [])
            } else {
                try db.execute("CREATE TRIGGER refuse_delete BEFORE DELETE ON forward_outbox WHEN OLD.id = \(refused) BEGIN SELECT RAISE(ABORT, 'delete refused'); END", [])
            }
        }
        let metrics = TestMetrics()
        let recorder = DeliveryRecorder(outbox: store.forwarding, metrics: metrics)
        // The first alone, recorded; the four behind it together, the refused entry among them: all four fail.
        let outcomes = try await Self.recordBehindAHeldRow(deliveries[0], Array(deliveries[1...4]), store, recorder, metrics)
        #expect(try outcomes[0].get())
        for outcome in outcomes.dropFirst() {
            #expect(throws: (any Error).self) { try outcome.get() }
            if case .failure(let error) = outcome { #expect(String(describing: error).contains("delete refused")) }
        }
        #expect(try metrics.expectRecorder("countersign_forward_record_batch_size").values == [1, 4])
        #expect(try await recorder.delivered(deliveries[5]), "the lane is free again")
        let left = try await store.column("SELECT id FROM forward_outbox ORDER BY id", as: Int64.self)
        #expect(left == deliveries[1...4].map(\.id), "a failed transaction records none of its deliveries")
    }

    /// Records `leader` with the rule's row held by another transaction, then `followers` once the leader's transaction
    /// has taken its batch (itself alone) and waits for the row, and releases the row once every follower waits: the
    /// leader's transaction records it alone, the next every follower. Each caller's outcome, leader first.
    static func recordBehindAHeldRow(_ leader: ForwardDelivery, _ followers: [ForwardDelivery], _ store: StoreDatabase,
                                     _ recorder: DeliveryRecorder, _ metrics: TestMetrics) async throws -> [Result<Bool, any Error>] {
        let batches = try metrics.expectRecorder("countersign_forward_record_batch_size")
        let depth = try metrics.expectGauge("countersign_forward_record_queue_depth")
        let release = try await holdRule("all", store)
        return await withTaskGroup(of: (Int, Result<Bool, any Error>).self) { group in
            for (index, delivery) in ([leader] + followers).enumerated() {
                if index == 1 {
                    let leading = await eventually(within: 60) { batches.values.count == 1 }
                    #expect(leading, "the leader took its batch")
                }
                group.addTask {
                    do { return (index, .success(try await recorder.delivered(delivery))) } catch { return (index, .failure(error)) }
                }
            }
            let queued = await eventually(within: 60) { depth.values.contains(Double(followers.count)) }
            release.signal()
            #expect(queued, "every follower waits behind the leader")
            var outcomes = [Result<Bool, any Error>?](repeating: nil, count: followers.count + 1)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.compactMap { $0 }
        }
    }

    /// A fresh store whose rule `all` has claimed `count` deliveries of as many postbacks (named `prefix` and a number).
    func claimed(_ count: Int, of prefix: String, _ engine: TestEngine) async throws -> (StoreDatabase, [ForwardDelivery]) {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all", concurrency: 50))
        _ = try store.ledger.persist(try (0..<count).map { intake(try aak("\(prefix)\($0)")) })
        let deliveries = try await store.forwarding.claim(partner: "all", limit: count, now: Date())
        try #require(deliveries.count == count)
        return (store, deliveries)
    }

    /// Holds the rule `name`'s row in a transaction of its own (on SQLite, the one writer) until the semaphore returned
    /// is signalled.
    static func holdRule(_ name: String, _ store: StoreDatabase) async throws -> DispatchSemaphore {
        let (holding, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread {
            try? store.engine.transaction { db in
                try db.execute("UPDATE forward_rules SET delivered = delivered WHERE name = ?", [name])
                holding.signal()
                release.wait()
            }
        }.start()
        try await Blocking.run { holding.wait() }
        return release
    }

    @Test(arguments: TestEngine.allCases) func aLapsedClaimIsClaimedAgainAndItsOldHolderCannotFinish(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "all", url: "http://127.0.0.1:1/all", timeout: 2))
        _ = try store.ledger.persist([intake(try aak("J"))])
        let now = Date()
        let first = try #require(try await store.forwarding.claim(partner: "all", limit: 1, now: now).first)
        #expect(try await store.forwarding.claim(partner: "all", limit: 1, now: now.addingTimeInterval(4)).isEmpty, "the claim lasts 2 × timeout + 1 s")
        let second = try #require(try await store.forwarding.claim(partner: "all", limit: 1, now: now.addingTimeInterval(6)).first)
        #expect(second.id == first.id)
        #expect(second.dedupKey == first.dedupKey)
        #expect(try await store.forwarding.delivered([first, second]) == [false, true], "one transaction records each by its own claim")
        let status = try await store.forwarding.status()
        #expect(status.rows.first?[try #require(status.columns.firstIndex(of: "delivered"))] == .number("1"))
        #expect(status.rows.first?[try #require(status.columns.firstIndex(of: "pending"))] == .number("0"))
    }

    @Test(arguments: TestEngine.allCases) func aRuleWithUndeliveredEntriesIsRemovedOnlyWhenTheyMayBeDropped(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.forwarding.set(ForwardRule(name: "gone", url: "http://127.0.0.1:1/g"))
        _ = try store.ledger.persist([intake(try aak("K")), intake(try aak("L"))])
        await #expect(throws: ForwardingOutbox.Refusal.undeliveredEntries(2)) { try await store.forwarding.remove("gone", dropEntries: false) }
        #expect(try await entries(store).count == 2)
        #expect(try await store.forwarding.remove("gone", dropEntries: true) == 2)
        #expect(try await store.forwarding.remove("gone", dropEntries: true) == nil)
        #expect(try await entries(store).isEmpty)
        // A rule without entries goes without asking.
        try await store.forwarding.set(ForwardRule(name: "empty", url: "http://127.0.0.1:1/e"))
        #expect(try await store.forwarding.remove("empty", dropEntries: false) == 0)
    }

    @Test(arguments: TestEngine.allCases) func rulesAreLimitedInNumberAndEntries(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        for index in 0..<3 { try await store.forwarding.set(ForwardRule(name: "r\(index)", url: "http://127.0.0.1:1/\(index)"), maximumRules: 3) }
        await #expect(throws: ForwardingOutbox.Refusal.tooManyRules(maximum: 3)) {
            try await store.forwarding.set(ForwardRule(name: "r3", url: "http://127.0.0.1:1/3"), maximumRules: 3)
        }
        // Changing an existing rule is not adding one.
        try await store.forwarding.set(ForwardRule(name: "r0", url: "http://127.0.0.1:1/changed", maximumEntries: 1000), maximumRules: 3)
        for name in ["r1", "r2"] { _ = try await store.forwarding.remove(name, dropEntries: true) }
        // r0 may hold 1000 entries: once it does, it is full and new postbacks are not queued for it.
        _ = try store.ledger.persist((0..<1000).map { intake(try! aak("F-\($0)")) })
        #expect(try await entries(store).count == 1000)
        #expect(try await store.forwarding.checkCapacity().map(\.full) == [true])
        #expect(try await store.forwarding.checkCapacity().isEmpty, "nothing changes while it stays full")
        let before = Date()
        _ = try store.ledger.persist((0..<5).map { intake(try! aak("G-\($0)")) })
        #expect(try await entries(store).count == 1000)
        let status = try await store.forwarding.status()
        #expect(status.rows.first?[try #require(status.columns.firstIndex(of: "full_since"))] != .null)
        // Room again (the partner took some), then the backfill queues what was stored meanwhile, within the limit.
        try await store.engine.write { db in _ = try db.execute("DELETE FROM forward_outbox WHERE id IN (SELECT id FROM forward_outbox ORDER BY id LIMIT 3)", []) }
        #expect(try await store.forwarding.checkCapacity().map(\.full) == [false])
        #expect(try await store.forwarding.backfill(partner: "r0", since: before) == 3)
        // The three queued are postbacks stored while the rule was full.
        let queued = Set(try await entries(store))
        #expect((0..<5).filter { queued.contains("r0 aak:" + Mint.uuid("G-\($0)")) }.count == 3)
        #expect(try await entries(store).count == 1000)
        #expect(try await store.forwarding.backfill(partner: "nobody", since: before) == nil)
    }
}

/// The pure parts: the retry schedule and a rule's checks.
@Suite struct ForwardingScheduleTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func delay(_ decision: ForwardingSchedule.Decision) -> TimeInterval? {
        guard case .retry(let at) = decision else { return nil }
        return at.timeIntervalSince(now)
    }

    @Test func backoffDoublesWithJitterUpToTheMaximum() {
        let schedule = ForwardingSchedule(initialBackoff: 10, maximumBackoff: 3600)
        let far = now.addingTimeInterval(9 * 86_400)
        #expect(delay(schedule.afterFailure(attempt: 1, now: now, deadline: far, retryAfter: nil, jitter: 0)) == 5)
        #expect(delay(schedule.afterFailure(attempt: 1, now: now, deadline: far, retryAfter: nil, jitter: 0.999))! < 10)
        #expect(delay(schedule.afterFailure(attempt: 4, now: now, deadline: far, retryAfter: nil, jitter: 0)) == 40)
        #expect(delay(schedule.afterFailure(attempt: 4, now: now, deadline: far, retryAfter: nil, jitter: 0.5)) == 60)
        #expect(delay(schedule.afterFailure(attempt: 30, now: now, deadline: far, retryAfter: nil, jitter: 1)) == 3600)
        #expect(delay(schedule.afterFailure(attempt: 10_000, now: now, deadline: far, retryAfter: nil, jitter: 0)) == 1800)
    }

    @Test func retryAfterIsHonouredUpToTheMaximum() {
        let schedule = ForwardingSchedule(initialBackoff: 10, maximumBackoff: 600)
        let far = now.addingTimeInterval(86_400)
        #expect(delay(schedule.afterFailure(attempt: 1, now: now, deadline: far, retryAfter: 120, jitter: 0)) == 120)
        #expect(delay(schedule.afterFailure(attempt: 1, now: now, deadline: far, retryAfter: 99_999, jitter: 0)) == 600)
        #expect(ForwardingSchedule.retryAfter("120", now: now) == 120)
        #expect(ForwardingSchedule.retryAfter("Fri, 15 Jan 2027 08:02:00 GMT", now: now) == 120)
        #expect(ForwardingSchedule.retryAfter("Fri, 15 Jan 2027 07:00:00 GMT", now: now) == 0)
        #expect(ForwardingSchedule.retryAfter("soon", now: now) == nil)
        #expect(ForwardingSchedule.retryAfter(nil, now: now) == nil)
        #expect(ForwardingSchedule.retryAfter("99999999999999999999", now: now) == nil)
    }

    @Test func theLastRetryIsAtTheDeadlineThenTheEntryIsDead() {
        let schedule = ForwardingSchedule(initialBackoff: 10, maximumBackoff: 3600)
        #expect(delay(schedule.afterFailure(attempt: 9, now: now, deadline: now.addingTimeInterval(100), retryAfter: nil, jitter: 0)) == 100)
        #expect(schedule.afterFailure(attempt: 10, now: now.addingTimeInterval(100), deadline: now.addingTimeInterval(100), retryAfter: nil, jitter: 0) == .dead)
    }

    @Test func aRuleIsCheckedFieldByField() {
        func problem(_ rule: ForwardRule) -> String? {
            do { try ForwardRule.check(rule); return nil } catch { return error.field }
        }
        let good = ForwardRule(name: "acme-mmp", url: "https://mmp.example/postbacks?network=1")
        #expect(problem(good) == nil)
        var rule = good
        rule.name = "Acme MMP"
        #expect(problem(rule) == "name")
        for url in ["ftp://x.example/", "/relative", "https://user:secret@x.example/", "https://x.example/#frag", "https://"] {
            rule = good
            rule.url = url
            #expect(problem(rule) == "url", "\(url)")
        }
        rule = good
        rule.concurrency = 0
        #expect(problem(rule) == "concurrency")
        rule = good
        rule.rate = .nan
        #expect(problem(rule) == "rate")
        rule = good
        rule.maximumAge = 91 * 86_400
        #expect(problem(rule) == "max_age")
        rule = good
        rule.timeout = 0
        #expect(problem(rule) == "timeout")
    }
}

extension ForwardDelivery {
    /// The same entry as an attempt whose claim has lapsed: another claim holds it now.
    fileprivate func lapsed() -> ForwardDelivery {
        ForwardDelivery(id: id, partner: partner, url: url, timeout: timeout, postbackID: postbackID, dedupKey: dedupKey, body: body, header: header,
                        attempts: attempts, deadline: deadline, claimID: "lapsed-" + claimID)
    }
}
