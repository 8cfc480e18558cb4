import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import Logging
import NIOCore
import Postback
import PostbackMint
import Store
import MetricsTestKit
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// Every public input has a budget and what is kept only for a while is pruned (issues 15 and 25): rejected bodies
/// and unverifiable postbacks per source and in all, padded members dropped before storage, rejected receipts and
/// unverifiable postbacks deleted after their retention; counted postbacks are never touched.
@Suite struct RetentionTests {
    static let junk = Array(("{\"jws-string\": \"" + String(repeating: "A", count: 900) + "\"}").utf8)
    static let stranger = try! ECPrivateKey.generate()

    /// An AAK postback signed with a key nobody pinned (`kid` unknown/0): unverifiable.
    static func unverifiable(_ id: String, padding: Int = 0) throws -> [UInt8] {
        let body = try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid(id)), key: stranger, keyID: "unknown/0")
        return padding == 0 ? body : padded(body, padding)
    }

    /// `body` with undocumented members holding `bytes` of filler, as an attacker pads it.
    static func padded(_ body: [UInt8], _ bytes: Int) -> [UInt8] {
        var object = try! JSONParser.parse(body).object!
        for index in 0..<(bytes / 8000 + 1) {
            object.set("padding-\(index)", .string(String(repeating: "x", count: min(8000, bytes - index * 8000))))
        }
        return Array(JSONValue.object(object).serialized.utf8)
    }

    @Test(arguments: TestEngine.allCases) func rejectedReceiptsAndUnverifiablePostbacksArePrunedAfterTheirRetentionAndNothingElse(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let verifier = PostbackVerifier(keyRing: LiveServer().keyRing)
        func intake(_ body: [UInt8], daysAgo: Double) -> Intake {
            let result = verifier.verify(body)
            return Intake(receivedAt: Date().addingTimeInterval(-daysAgo * 86_400), remoteAddress: "192.0.2.1", route: .aak, body: body,
                          result: result, decision: TrustPolicy().decide(result))
        }
        let genuine = Array(buffer: try LiveServer.aak("R-1"))
        let dispositions = try store.ledger.persist([
            intake(Self.junk, daysAgo: 40), intake(Self.junk, daysAgo: 31), intake(genuine, daysAgo: 40), intake(genuine, daysAgo: 40),
            intake(Self.junk, daysAgo: 2), intake(try Self.unverifiable("U-old"), daysAgo: 100), intake(try Self.unverifiable("U-old"), daysAgo: 99),
            intake(try Self.unverifiable("U-new"), daysAgo: 10),
        ])
        #expect(dispositions == [.rejected, .rejected, .stored, .duplicate, .rejected, .stored, .duplicate, .stored])
        try store.rollup.fold()
        let metrics = TestMetrics()
        let pruner = RetentionPruner(store: store, rejectedRetention: 30 * 86_400, unverifiableRetention: 90 * 86_400, logger: Logger(label: "test"),
                                     metrics: metrics)
        let first = try await pruner.round()
        #expect(first.rejected == 2)
        #expect(first.unverifiable == 1)
        #expect(try metrics.expectCounter("countersign_pruned_total", [("kind", "rejected_receipt")]).totalValue == 2)
        #expect(try metrics.expectCounter("countersign_pruned_total", [("kind", "unverifiable")]).totalValue == 1)
        #expect(try await pruner.round() == (0, 0))
        // Left: the counted postback and its duplicate, the recent junk, the recent unverifiable postback.
        let receipts = try await store.column("SELECT disposition FROM receipts ORDER BY id", as: String.self)
        #expect(receipts == ["stored", "duplicate", "rejected", "stored"])
        let postbacks = try await store.column("SELECT outcome FROM postbacks ORDER BY id", as: String.self)
        #expect(postbacks == ["verified", "unverifiable"])
        // The rollup follows: a report of everything stored agrees with the rows.
        let query = try ReportQuery.parse([("include_uncounted", "true")])
        let fromRollup = try await store.reports.report(query)
        let fromRows = try await store.reports.report(query, forceRows: true)
        #expect(fromRollup.rows == fromRows.rows)
        #expect(try await store.scalar("SELECT count(*) FROM postbacks WHERE countable = 1", as: Int.self) == 1)
    }

    @Test(arguments: TestEngine.allCases) func aJunkFloodStoresAtMostTheBudgetsOfBodiesAndReceipts(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.rejectedBodyBudget = 5
        server.settings.rejectedReceiptBudget = 40
        let padded = Self.padded(Self.junk, 20_000)
        try await server.run { client in
            for index in 0..<60 {
                let answer = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(bytes: index == 0 ? padded : Self.junk))
                #expect(answer.status == .badRequest)
                #expect(answer.json?["error"]?.string != nil)
            }
            let genuine = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("R-2"))
            #expect(genuine.status == .ok)
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"countersign_budget_exceeded_total{kind="rejected_receipt",scope="source"}"#))
            #expect(metrics.contains(#"countersign_budget_exceeded_total{kind="rejected_body",scope="source"}"#))
        }
        let receipts = try await server.scalar("SELECT count(*) FROM receipts WHERE disposition = 'rejected'", as: Int.self)
        let kept = try await server.scalar("SELECT count(*) FROM receipts WHERE disposition = 'rejected' AND length(body) > 0", as: Int.self) ?? 0
        let bytes = try await server.scalar("SELECT sum(length(body)) FROM receipts WHERE disposition = 'rejected'", as: Int.self) ?? 0
        // The receipt budget's burst of 40, perhaps one more refilled while the flood ran; bodies: a burst of 5, the
        // padded one cut to its first 4 KiB.
        #expect((40...41).contains(receipts ?? 0))
        #expect((5...6).contains(kept))
        #expect(bytes <= Ingest.rejectedBodyKept + 5 * Self.junk.count)
        #expect(try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 1)
    }

    @Test(arguments: TestEngine.allCases) func unverifiablePostbacksBeyondTheBudgetAreAnswered429AndNotStored(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.unverifiableBudget = 5
        try await server.run { client in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<20 {
                let answer = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(bytes: try Self.unverifiable("F-\(index)", padding: 30_000)))
                statuses.append(answer.status)
                if answer.status == .tooManyRequests {
                    #expect(answer.json?["error"]?.string == "rate_limited")
                    #expect(Int(answer.headers[.retryAfter] ?? "") ?? 0 >= 1)
                }
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == .ok })
            #expect(statuses.filter { $0 == .tooManyRequests }.count >= 14)
            // Genuine postbacks are never held back by the budget.
            #expect(try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("R-3")).status == .ok)
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"countersign_budget_exceeded_total{kind="unverifiable",scope="source"}"#))
        }
        let unverifiable = try await server.scalar("SELECT count(*) FROM postbacks WHERE outcome = 'unverifiable'", as: Int.self) ?? 0
        #expect((5...6).contains(unverifiable))
        // Each padded body stored without its 30 KB of padding, and so its row.
        let largest = try await server.scalar("SELECT max(length(body)) FROM receipts", as: Int.self) ?? 0
        #expect(largest < 2048)
        let unsigned = try await server.scalar("SELECT max(length(unsigned_json)) FROM postbacks", as: Int.self) ?? 0
        #expect(unsigned < 1024)
    }

    /// Padding by white space instead of members, or inside a JWS nobody can verify, stores no more than Apple's own
    /// postbacks do; an unverifiable body that stays large is refused (red team of issue 25).
    @Test(arguments: TestEngine.allCases) func whiteSpaceAndLargeUnverifiablePayloadsAreNotStored(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let spaced = try Self.unverifiable("W-1") + Array(repeating: UInt8(ascii: " "), count: 60_000)
        var payload = AAKPostbackFields(postbackID: Mint.uuid("W-2")).payload
        payload.set("padding", .string(String(repeating: "x", count: 11_500)))
        let jws = try CompactJWS.sign(payload: Array(JSONValue.object(payload).serialized.utf8), keyID: "unknown/0", with: Self.stranger)
        let big = Array(JSONValue.object(JSONObject([JSONMember(key: "jws-string", value: .string(jws))])).serialized.utf8)
        let tabbed = Array(#"{"jws-string": "a.b.c", "country-code": "U\tS"}"#.utf8)
        try await server.run { client in
            let stored = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(bytes: spaced))
            #expect(stored.status == .ok)
            let refused = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(bytes: big))
            #expect(refused.status == .badRequest)
            #expect(refused.json?["error"]?.string == "too_large")
            let tab = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(bytes: tabbed))
            #expect(tab.status == .badRequest)
        }
        #expect(try await server.scalar("SELECT max(length(body)) FROM receipts", as: Int.self) ?? 0 <= Ingest.rejectedBodyKept)
        #expect(try await server.scalar("SELECT length(body) FROM receipts WHERE disposition = 'stored'", as: Int.self) ?? 0 < 2048)
        #expect(try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 1)
    }

    /// iAd dictionaries and AdServices tokens have a storage budget per source and in all, a small body limit, and
    /// no room for padding (red team of issue 25: one address stored 44 MB a minute through the iAd route).
    @Test(arguments: TestEngine.allCases) func appleAdsSubmissionsHaveABudget(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.publicRecordBudget = 5
        try await server.run { client in
            var dictionary = try #require(try JSONParser.parse(Array(AppleAdsServerTests.example.utf8)).object)
            var inner = try #require(dictionary["Version3.1"]?.object)
            inner.set("padding", .string(String(repeating: "x", count: 4000)))
            dictionary.set("Version3.1", .object(inner))
            let padded = try await client.execute(uri: "/v1/iad/attribution?app=1108187390", method: .post, body: ByteBuffer(string: JSONValue.object(dictionary).serialized))
            #expect(padded.status == .badRequest)
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<12 {
                let answer = try await client.execute(uri: "/v1/iad/attribution?app=1108187390&install_id=i-\(index)", method: .post,
                                                      body: ByteBuffer(string: AppleAdsServerTests.example))
                statuses.append(answer.status)
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == .ok })
            #expect(statuses.contains(.tooManyRequests))
            // A body beyond 16 KiB is not read at all (the connection closes after the 413, so this comes last).
            inner.set("padding", .string(String(repeating: "x", count: 40_000)))
            dictionary.set("Version3.1", .object(inner))
            let large = try await client.execute(uri: "/v1/iad/attribution?app=1108187390", method: .post, body: ByteBuffer(string: JSONValue.object(dictionary).serialized))
            #expect(large.status == .contentTooLarge)
        }
        let stored = try await server.scalar("SELECT count(*) FROM attribution_records", as: Int.self) ?? 0
        #expect((5...6).contains(stored))
    }

    @Test func aGenuinePostbackWithPaddingStillVerifiesAndStoresSmall() throws {
        let verifier = PostbackVerifier(keyRing: LiveServer().keyRing)
        let genuine = Array(buffer: try LiveServer.aak("R-4"))
        let padded = Self.padded(genuine, 40_000)
        let trimmed = PostbackBody.trimmingUnknownMembers(padded)
        #expect(trimmed.count < genuine.count + 16)
        guard case .verified(let postback, _) = verifier.verify(trimmed) else { Issue.record("the trimmed body does not verify"); return }
        #expect(postback.postbackID == Mint.uuid("R-4"))
        // A few unknown members are kept, as Apple adds members over time.
        let small = Self.padded(genuine, 500)
        #expect(PostbackBody.trimmingUnknownMembers(small) == small)
    }

    @Test func sourcesGroupIPv6ByTheir64AndIPv4ByAddress() throws {
        let grouping = SourceGrouping()
        func source(_ text: String) throws -> String { grouping.source(of: try SocketAddress(ipAddress: text, port: 443)) }
        #expect(try source("2001:db8:1:2::1") == source("2001:db8:1:2:ffff:ffff:ffff:fffe"))
        #expect(try source("2001:db8:1:2::1") == "2001:db8:1:2:0:0:0:0/64")
        #expect(try source("2001:db8:1:3::1") != source("2001:db8:1:2::1"))
        #expect(try source("203.0.113.7") == "203.0.113.7/32")
        #expect(try source("::ffff:203.0.113.7") == "203.0.113.7/32")
        #expect(try source("203.0.113.7") != source("203.0.113.8"))
        let wide = SourceGrouping(v4Prefix: 24, v6Prefix: 48)
        #expect(wide.source(of: try SocketAddress(ipAddress: "203.0.113.7", port: 1)) == "203.0.113.0/24")
        #expect(wide.source(of: try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 1)) == "2001:db8:1:0:0:0:0:0/48")
        // Rotating addresses inside one /64 spends one budget.
        let metrics = TestMetrics()
        let budget = IntakeBudget(kind: "test", perSourcePerMinute: 3, globalPerMinute: 1000, metrics: metrics)
        let spent = try (1...6).map { budget.spend(try source("2001:db8:1:2::\($0)")) == nil }
        #expect(spent == [true, true, true, false, false, false])
        #expect(try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "test"), ("scope", "source")]).totalValue == 3)
        #expect(budget.spend(try source("2001:db8:9:9::1")) == nil)
    }
}
