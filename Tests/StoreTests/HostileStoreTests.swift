import Foundation
import GRDB
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store

/// Forgeries and odd copies must not change what counts (issue 11, finding 8).
@Suite struct HostileStoreTests {
    static let key = try! ECPrivateKey.generate()
    static let stranger = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))

    func intake(_ body: [UInt8], with verifier: PostbackVerifier? = nil) -> Intake {
        let result = (verifier ?? self.verifier).verify(body)
        return Intake(receivedAt: Date(), remoteAddress: "127.0.0.1:1", route: "any", body: body, result: result, decision: TrustPolicy().decide(result))
    }

    func aak(_ label: String, keyID: String = "net/0", key: ECPrivateKey = key, _ change: (inout AAKPostbackFields) -> Void = { _ in }) throws -> [UInt8] {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(label))
        change(&fields)
        return try Mint.aak(fields, key: key, keyID: keyID)
    }

    func row(_ store: StoreDatabase, _ label: String) async throws -> Row {
        try await store.pool.read { db in
            try #require(try Row.fetchOne(db, sql: "SELECT outcome, countable, duplicates, replays, unverified_copies FROM postbacks WHERE dedup_key = ?",
                                          arguments: ["aak:" + Mint.uuid(label)]))
        }
    }

    @Test func aForgeryMarkedInvalidByReverifyDoesNotBlockTheGenuinePostback() async throws {
        let store = try StoreDatabase(settings: StoreSettings(path: temporaryDatabasePath()))
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
        #expect(stored["outcome"] as String == "verified")
        #expect(stored["countable"] as Bool == true)
    }

    @Test func unverifiableCopiesOfACountedPostbackAreCountedApart() async throws {
        let store = try StoreDatabase(settings: StoreSettings(path: temporaryDatabasePath()))
        #expect(try store.ledger.persist([intake(try aak("G"))]) == [.stored])
        let forgeries = try (0..<3).map { index in intake(try aak("G", keyID: "unknown/\(index)", key: Self.stranger) { $0.conversionValue = 63 }) }
        #expect(try store.ledger.persist(forgeries) == [.unverifiedCopy, .unverifiedCopy, .unverifiedCopy])
        #expect(try store.ledger.persist([intake(try aak("G") { $0.conversionValue = 1 })]) == [.replay])
        let stored = try await row(store, "G")
        #expect(stored["outcome"] as String == "verified")
        #expect(stored["replays"] as Int == 1)
        #expect(stored["unverified_copies"] as Int == 3)
        let receipts = try await store.pool.read { db in try String.fetchAll(db, sql: "SELECT disposition FROM receipts ORDER BY id") }
        #expect(receipts == ["stored", "unverified_copy", "unverified_copy", "unverified_copy", "replay"])
    }

    @Test func lowercaseCountryCodesAreReachableByTheFilter() async throws {
        let store = try StoreDatabase(settings: StoreSettings(path: temporaryDatabasePath()))
        _ = try store.ledger.persist([intake(try aak("H") { $0.countryCode = "us" }), intake(try aak("I") { $0.countryCode = "US" })])
        for filter in ["us", "US"] {
            let table = try await store.reports.report(try ReportQuery.parse([("country", filter), ("by", "country")]))
            #expect(table.rows.count == 1)
            #expect(table.rows.first?.first == .string("US"))
        }
    }

    @Test func theWriterReportsItsHealth() async throws {
        let store = try StoreDatabase(settings: StoreSettings(path: temporaryDatabasePath()))
        let writer = GroupCommitWriter(database: store)
        try await withRunningWriter(writer) {
            #expect(writer.isHealthy)
            try await store.pool.write { db in
                try db.execute(sql: "CREATE TRIGGER fail BEFORE INSERT ON receipts BEGIN SELECT RAISE(ABORT, 'disk full'); END")
            }
            await #expect(throws: (any Error).self) { try await writer.submit(intake(try aak("J"))) }
            #expect(!writer.isHealthy)
            try await store.pool.write { db in try db.execute(sql: "DROP TRIGGER fail") }
            #expect(try await writer.submit(intake(try aak("J"))) == .stored)
            #expect(writer.isHealthy)
        }
    }
}
