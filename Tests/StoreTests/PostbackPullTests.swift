import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// The raw pull (issue 48, item 4): an advertiser's postbacks with Apple's fields as received plus the network's ids
/// and names, checked against the raw rows on both engines, across pages, as NDJSON and CSV.
@Suite struct PostbackPullTests {
    static let key = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))
    static let network = "net-a.adattributionkit"
    static let app: AppID = 10738027756
    static let otherApp: AppID = 525463029

    func intake(_ body: [UInt8]) -> Intake {
        let result = verifier.verify(body)
        return Intake(receivedAt: Date(), remoteAddress: "203.0.113.9", route: .any, body: body, result: result,
                      decision: TrustPolicy(allowDevelopment: true).decide(result))
    }

    func aak(_ id: String, app: AppID, source: String) throws -> [UInt8] {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
        fields.adNetworkID = Self.network
        fields.sourceIdentifier = source
        fields.advertisedItemID = app.number
        fields.conversionValue = 9
        return try Mint.aak(fields, key: Self.key, keyID: "net/0")
    }

    /// Everything `query` selects, written in pages of two.
    static func pull(_ store: StoreDatabase, _ query: ReportQuery, template: String, format: PullWriter.Format) async throws -> String {
        let chosen = try #require(await store.deliveryTemplates.named(template))
        let collected = Collected()
        try await PullWriter.write(store.pull, query, template: chosen, format: format, page: 2) { collected.append($0) }
        return String(decoding: collected.bytes, as: UTF8.self)
    }

    @Test(arguments: TestEngine.allCases) func aPullGivesApplesFieldsAsReceivedAndTheNamesInForce(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        try await store.names.setSourceName(app: Self.app, adNetwork: Self.network, level: .campaign, digits: "12", name: "Spring")
        var sent: [String: [UInt8]] = [:]
        for (id, app, source) in [("P-1", Self.app, "1234"), ("P-2", Self.app, "5678"), ("P-3", Self.otherApp, "1234"), ("P-4", Self.app, "12")] {
            let body = try aak(id, app: app, source: source)
            sent[Mint.uuid(id)] = body
            #expect(try store.ledger.persist([intake(body)]) == [.stored])
        }
        let query = try ReportQuery.parse([("app", String(Self.app))])
        let lines = try await Self.pull(store, query, template: "pull", format: .ndjson).split(separator: "\n")
        // The raw rows: the app's counted postbacks, oldest first.
        let raw = try await store.rows("SELECT postback_identifier, source_digits, received_at FROM postbacks WHERE advertised_item_id = ? AND countable = 1 ORDER BY id",
                                       [Self.app.number])
        #expect(lines.count == raw.count && raw.count == 3)
        for (line, row) in zip(lines, raw) {
            let object = try #require(try JSONParser.parse(Array(line.utf8)).object)
            let identifier = try row.get("postback_identifier", as: String.self)
            let body = try #require(sent[identifier])
            let apple = try #require(try JSONParser.parse(body).object)
            for member in apple.members { #expect(object[member.key] == member.value, "Apple's \(member.key) as received") }
            let digits = try row.get("source_digits", as: String.self)
            #expect(object["ad-network-campaign-id"] == .string(String(digits.prefix(2))))
            #expect(object["ad-network-campaign-name"] == .string(digits.hasPrefix("12") ? "Spring" : String(digits.prefix(2))))
            #expect(object["received-at"] == .string(try row.get("received_at", as: String.self)))
            #expect(object["countersign-outcome"] == .string("verified") && object["countersign-countable"] == .bool(true))
        }
        // CSV: Apple's documented fields, then the template's keys; a cell a postback lacks is empty.
        let csv = try await Self.pull(store, query, template: "pull", format: .csv).split(separator: "\n", omittingEmptySubsequences: false)
        let template = try #require(try await store.deliveryTemplates.named("pull"))
        #expect(csv.first.map(String.init) == (DeliveryTemplate.appleFieldNames + template.fields.map(\.key)).joined(separator: ","))
        #expect(csv.count == raw.count + 2, "a header, a row a postback and the last line break")
        let sourceColumn = try #require(DeliveryTemplate.appleFieldNames.firstIndex(of: "source-identifier"))
        for (line, row) in zip(csv.dropFirst(), raw) {
            let digits = try row.get("source_digits", as: String.self)
            #expect(line.split(separator: ",", omittingEmptySubsequences: false)[sourceColumn] == digits)
        }
        // Another template makes the bodies; the other app's postback is in no pull of this app.
        let other = try await Self.pull(store, try ReportQuery.parse([("app", String(Self.otherApp))]), template: "appmetrica", format: .ndjson)
        #expect(other.split(separator: "\n").count == 1)
        #expect(try JSONParser.parse(Array(other.split(separator: "\n")[0].utf8)).object?["ad-network-campaign-id"] == .string("12"))
        #expect(!other.contains(Mint.uuid("P-1")))
    }

    /// Bytes collected by a `@Sendable` writer.
    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var collected: [UInt8] = []

        func append(_ bytes: [UInt8]) { lock.withLock { collected += bytes } }
        var bytes: [UInt8] { lock.withLock { collected } }
    }
}
