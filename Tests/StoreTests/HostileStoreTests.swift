import CountersignServer
import Foundation
import MetricsTestKit
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Forgeries and odd copies must not change what counts (issue 11, finding 8).
@Suite struct HostileStoreTests {
    static let key = try! ECPrivateKey.generate()
    static let stranger = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))

    func intake(_ body: [UInt8], with verifier: PostbackVerifier? = nil) -> Intake {
        let result = (verifier ?? self.verifier).verify(body)
        return Intake(receivedAt: Date(), remoteAddress: "127.0.0.1:1", route: .any, body: body, result: result, decision: TrustPolicy().decide(result))
    }

    func aak(_ label: String, keyID: String = "net/0", key: ECPrivateKey = key, _ change: (inout AAKPostbackFields) -> Void = { _ in }) throws -> [UInt8] {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(label))
        change(&fields)
        return try Mint.aak(fields, key: key, keyID: keyID)
    }

    func row(_ store: StoreDatabase, _ label: String) async throws -> SQLRow {
        try #require(try await store.rows("SELECT outcome, countable, duplicates, replays, unverified_copies FROM postbacks WHERE dedup_key = ?",
                                          ["aak:" + Mint.uuid(label)]).first)
    }

    @Test(arguments: TestEngine.allCases) func aForgeryMarkedInvalidByReverifyDoesNotBlockTheGenuinePostback(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let later = try ECPrivateKey.generate()
        // A forgery under a kid nobody knows yet arrives first and is kept as unverifiable.
        #expect(try store.ledger.persist([intake(try aak("F", keyID: "later/0", key: Self.stranger))]) == [.stored])
        let withLater = PostbackVerifier(keyRing: try verifier.keyRing.adding([
            KeyEntry(keyID: "later/0", key: later.publicKey, environment: .production, usages: [.aak], origin: "test"),
        ]))
        let summary = try await store.ledger.reverify { _, body in
            let result = withLater.verify(body)
            return (result, TrustPolicy().decide(result))
        }
        #expect(summary.nowInvalid == 1)
        // The genuine postback, signed with the key that has now arrived, still counts.
        #expect(try store.ledger.persist([intake(try aak("F", keyID: "later/0", key: later), with: withLater)]) == [.stored])
        let stored = try await row(store, "F")
        #expect(try stored.get("outcome", as: String.self) == "verified")
        #expect(try stored.get("countable", as: Bool.self) == true)
    }

    @Test(arguments: TestEngine.allCases) func unverifiableCopiesOfACountedPostbackAreCountedApart(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        #expect(try store.ledger.persist([intake(try aak("G"))]) == [.stored])
        let forgeries = try (0..<3).map { index in intake(try aak("G", keyID: "unknown/\(index)", key: Self.stranger) { $0.conversionValue = 63 }) }
        #expect(try store.ledger.persist(forgeries) == [.unverifiedCopy, .unverifiedCopy, .unverifiedCopy])
        // A forgery repeating the counted row exactly is no duplicate either: found by racing receivers (issue 12).
        #expect(try store.ledger.persist([intake(try aak("G", keyID: "unknown/9", key: Self.stranger))]) == [.unverifiedCopy])
        #expect(try store.ledger.persist([intake(try aak("G") { $0.conversionValue = 1 })]) == [.replay])
        let stored = try await row(store, "G")
        #expect(try stored.get("outcome", as: String.self) == "verified")
        #expect(try stored.get("replays", as: Int.self) == 1)
        #expect(try stored.get("unverified_copies", as: Int.self) == 4)
        #expect(try stored.get("duplicates", as: Int.self) == 0)
        let receipts = try await store.column("SELECT disposition FROM receipts ORDER BY id", as: String.self)
        #expect(receipts == ["stored", "unverified_copy", "unverified_copy", "unverified_copy", "unverified_copy", "replay"])
    }

    @Test(arguments: TestEngine.allCases) func lowercaseCountryCodesAreReachableByTheFilter(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        _ = try store.ledger.persist([intake(try aak("H") { $0.countryCode = "us" }), intake(try aak("I") { $0.countryCode = "US" })])
        for filter in ["us", "US"] {
            let table = try await store.reports.report(try ReportQuery.parse([("country", filter), ("by", "country")]))
            #expect(table.rows.count == 1)
            #expect(table.rows.first?.first == .string("US"))
        }
    }

    @Test(arguments: TestEngine.allCases) func theWriterReportsItsHealth(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let writer = GroupCommitWriter(database: store, metrics: TestMetrics())
        try await withRunningWriter(writer) {
            #expect(writer.isHealthy)
            try await store.engine.write { db in try RefusingTrigger.install(on: "receipts", message: "disk full", db) }
            await #expect(throws: (any Error).self) { try await writer.submit(intake(try aak("J"))) }
            #expect(!writer.isHealthy)
            try await store.engine.write { db in try RefusingTrigger.remove(from: "receipts", db) }
            #expect(try await writer.submit(intake(try aak("J"))) == .stored)
            #expect(writer.isHealthy)
        }
    }
}
