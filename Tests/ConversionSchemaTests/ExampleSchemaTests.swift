import Foundation
import Testing
import JWS
@testable import Postback
@testable import ConversionSchema

enum Examples {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func schema(_ name: String) throws -> ConversionSchema {
        let check = SchemaReader.check(Array(try Data(contentsOf: root.appendingPathComponent("examples/schemas/\(name).json"))))
        #expect(check.diagnostics.isEmpty, "\(check.diagnostics)")
        return try #require(check.schema)
    }

    static let november = Timestamp("2026-11-20T12:00:00Z")
    static let july = Timestamp("2026-07-01T12:00:00Z")
}

func Timestamp(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }

func decode(_ schema: ConversionSchema, _ conversionClass: ConversionClass = .install, window: Int, fine: Int? = nil,
            coarse: CoarseValue.Level? = nil, source: String? = nil, at time: Date = Examples.november) throws -> DecodedConversion {
    try SchemaDecoder.decode(schema, conversionClass: conversionClass, window: window, fine: fine, coarse: coarse, sourceIdentifier: source, at: time).get()
}

@Suite struct ExampleSchemaTests {
    @Test(arguments: ["game", "subscription", "shop"])
    func examplesCheckClean(name: String) throws {
        let schema = try Examples.schema(name)
        #expect(!schema.versions.isEmpty)
        #expect(schema.versions.allSatisfy { $0.classes[.install] != nil })
    }

    /// The game uses bit fields: bits 0-3 a revenue bucket, bits 4-5 progress.
    @Test func gameDecodingTable() throws {
        let game = try Examples.schema("game")
        let table: [(fine: Int, events: [String], min: Double?, max: Double?, level: String)] = [
            (0, [], nil, nil, "tutorial"),
            (1, ["purchase"], 0.01, 0.99, "tutorial"),
            (0b01_0011, ["purchase", "level_5_reached"], 1.99, 4.99, "5+"),
            (0b10_0000, ["level_10_reached"], nil, nil, "10+"),
            (63, ["purchase", "level_20_reached"], 499.99, 999.99, "20+"),
        ]
        for row in table {
            let decoded = try decode(game, window: 0, fine: row.fine)
            #expect(decoded.events.map(\.name) == row.events, "value \(row.fine)")
            #expect(decoded.revenue?.min == row.min)
            #expect(decoded.revenue?.max == row.max)
            #expect(decoded.properties["level"] == row.level)
            #expect(decoded.schemaVersion == 2)
        }
        #expect(try decode(game, window: 0, coarse: .high).revenue?.min == 4.99)
        #expect(try decode(game, window: 0, coarse: .high, at: Examples.july).revenue?.min == 9.99)
        #expect(try decode(game, window: 1, coarse: .low).events.map(\.name) == ["retained"])
        #expect(try decode(game, window: 2, coarse: .medium).revenue?.max == 19.99, "window 2 inherits window 1")
        #expect(try decode(game, .reEngagement, window: 0, fine: 40).revenue?.max == 99.99)
        #expect(try decode(game, .reEngagement, window: 2, coarse: .low).events.map(\.name) == ["session"])
    }

    /// A value the schema defines with no event is told from one it leaves undefined (issue 27: the Events page listed
    /// the game's value 0, which its schema defines with an empty events list, as undefined).
    @Test func aValueDefinedWithNoEventIsNotUndefined() throws {
        let game = try Examples.schema("game")
        #expect(try decode(game, window: 0, fine: 0).defined)
        #expect(try decode(game, window: 0, fine: 0).events.isEmpty)
        let document = #"{"format": "countersign.conversion-schema/1", "app": "123", "currency": "USD", "versions": [{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"0": {"fine": {"values": [{"range": [0, 9], "events": [{"name": "open"}]}]}}}}}]}"#
        let partial = try #require(SchemaReader.check(Array(document.utf8)).schema)
        #expect(try decode(partial, window: 0, fine: 3).defined)
        #expect(try !decode(partial, window: 0, fine: 40).defined)
        #expect(try !decode(partial, window: 0).defined, "no value is not a defined value")
    }

    @Test func subscriptionDecodingTable() throws {
        let subscription = try Examples.schema("subscription")
        #expect(try decode(subscription, window: 0, fine: 0).events.map(\.name) == ["install"])
        let paywall = try decode(subscription, window: 0, fine: 5)
        #expect(paywall.events.map(\.name) == ["trial_started", "paywall_viewed"])
        #expect(paywall.events[1].count == 2)
        let annual = try decode(subscription, window: 0, fine: 50)
        #expect(annual.revenue == RevenueRange(min: 39.99, max: 59.99, currency: "EUR"))
        #expect(annual.events.first?.properties["plan"] == "annual")
        #expect(try decode(subscription, window: 1, coarse: .medium).revenue?.max == 4.99)
        #expect(try decode(subscription, window: 2, coarse: .high).revenue?.max == 119.99)
        #expect(try decode(subscription, .reEngagement, window: 1, coarse: .high).events.map(\.name) == ["subscription_started"])
        #expect(try decode(subscription, window: 0, fine: 10, source: "1107").source.map(\.digits) == ["11", "07"])
    }

    @Test func shopDecodingTable() throws {
        let shop = try Examples.schema("shop")
        let expectations: [(Int, Double?, Double?)] = [(0, nil, nil), (1, nil, nil), (2, 0, 10), (7, 50, 75), (13, 500, 1000), (14, 1000, 5000), (63, 1000, 5000)]
        for (fine, low, high) in expectations {
            let decoded = try decode(shop, window: 0, fine: fine)
            #expect(decoded.revenue?.min == low, "value \(fine)")
            #expect(decoded.revenue?.max == high, "value \(fine)")
        }
        #expect(try decode(shop, window: 0, fine: 40).properties["segment"] == "whale")
        #expect(try decode(shop, window: 1, coarse: .high).revenue?.midpoint == 300)
        #expect(try decode(shop, .reEngagement, window: 0, fine: 3).events.map(\.name) == ["order"])
        #expect(try decode(shop, window: 2, coarse: .low).events.map(\.name) == ["browse"], "window 2 inherits window 1")
    }

    @Test func sourceIdentifierHierarchy() throws {
        let game = try Examples.schema("game")
        let full = try decode(game, window: 0, fine: 1, source: "1123").source
        #expect(full.map(\.level) == ["campaign", "ad-group", "creative"])
        #expect(full.map(\.digits) == ["11", "2", "3"])
        #expect(full.map(\.name) == ["Summer sale", "Europe", "Static"])
        #expect(try decode(game, window: 1, coarse: .low, source: "12").source.map(\.name) == ["Retargeting"])
        #expect(try decode(game, window: 0, fine: 1, source: "991").source.map(\.name) == [nil, "US"])
    }

    @Test func versionChoiceByTime() throws {
        let game = try Examples.schema("game")
        #expect(try decode(game, window: 0, fine: 0, at: Timestamp("2026-10-31T23:59:59Z")).schemaVersion == 1)
        #expect(try decode(game, window: 0, fine: 0, at: Timestamp("2026-11-01T00:00:00Z")).schemaVersion == 2)
        let early = SchemaDecoder.decode(game, conversionClass: .install, window: 0, fine: 0, coarse: nil, sourceIdentifier: nil, at: Timestamp("2025-12-31T00:00:00Z"))
        #expect(early == .failure(.noVersionInForce))
    }

    @Test func bitFieldExtraction() {
        let field = BitField(name: "days", lowBit: 4, highBit: 5, values: [:])
        #expect(field.extract(0b11_0000) == 3)
        #expect(field.extract(0b01_1111) == 1)
        #expect(BitField(name: "revenue", lowBit: 0, highBit: 3, values: [:]).extract(0b10_1010) == 0b1010)
    }

    @Test func decodesAPostback() throws {
        let shop = try Examples.schema("shop")
        var object = JSONObject()
        object.set("conversion-type", .string("redownload"))
        let postback = Postback(family: .aak, version: nil, postbackID: "x", adNetworkID: "n", sourceIdentifier: "1011", campaignID: nil,
                                advertisedItemID: 10738027756, conversionType: ConversionType(rawValue: "redownload"), redownload: nil,
                                didWin: true, postbackSequenceIndex: 0, publisherItemID: nil, sourceDomain: nil, marketplaceID: nil,
                                impressionType: nil, fidelityType: nil, conversionValue: 5, signedFields: object, unsignedFields: JSONObject())
        let decoded = try SchemaDecoder.decode(shop, postback: postback, receivedAt: Examples.november).get()
        #expect(decoded.conversionClass == .install)
        #expect(decoded.revenue?.min == 30)
        #expect(decoded.source.first?.name == "Launch")
    }
}
