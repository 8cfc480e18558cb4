import Testing
import JWS
@testable import ConversionSchema

/// Schema documents that used to reach a trap or an unbounded allocation (issue 11, finding 3): each is now an error
/// diagnostic with its JSON path.
@Suite struct HostileSchemaTests {
    func document(window0: String = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "open"}]}]}}"#,
                  hierarchy: String = "", app: String = "123") -> [UInt8] {
        let versions = #"[{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"0": \#(window0)}}}]"#
        let levels = hierarchy.isEmpty ? "" : #", "source-identifier": \#(hierarchy)"#
        return Array(#"{"format": "countersign.conversion-schema/1", "app": "\#(app)", "currency": "USD"\#(levels), "versions": \#(versions)}"#.utf8)
    }

    func errors(_ bytes: [UInt8]) -> [SchemaDiagnostic] {
        let check = SchemaReader.check(bytes)
        #expect(check.schema == nil)
        return check.diagnostics.filter { $0.severity == .error }
    }

    @Test(arguments: ["[3, 1]", "[2, 1]", "[1, 3]", "[0, 1]", "[4, 5]", "[-9223372036854775808, 9223372036854775807]", "[]"])
    func digitPositionsThatAreNotARun(digits: String) {
        let found = errors(document(hierarchy: #"[{"level": "campaign", "digits": \#(digits)}]"#))
        #expect(found.contains { $0.path == "$.source-identifier[0].digits" })
    }

    @Test(arguments: ["[0, 4611686018427387903]", "[0, 9223372036854775807]", "[-9223372036854775808, 0]", "[63, 64]"])
    func valueRangesBeyondTheValues(range: String) {
        let found = errors(document(window0: #"{"fine": {"values": [{"range": \#(range), "events": []}]}}"#))
        #expect(found.contains { $0.path == "$.versions[0].install.windows.0.fine.values[0].range" })
    }

    @Test(arguments: ["1e300", "1e999", "-1e999", "1e13"])
    func revenueAmountsOutOfBounds(amount: String) {
        let window = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "buy", "revenue": {"min": 0, "max": \#(amount)}}]}]}}"#
        let found = errors(document(window0: window))
        #expect(found.contains { $0.path.hasPrefix("$.versions[0].install.windows.0.fine.values[0].events[0].revenue") })
    }

    @Test func eventCountsAreBounded() {
        let window = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "open", "count": 9223372036854775807}]}]}}"#
        #expect(errors(document(window0: window)).contains { $0.path == "$.versions[0].install.windows.0.fine.values[0].events[0].count" })
    }

    @Test(arguments: ["١٢٣", "99999999999999999999", "12a"])
    func appIDsAreASCIIDigitsWithin64Bits(app: String) {
        #expect(errors(document(app: app)).contains { $0.path == "$.app" })
    }

    @Test func nameKeysAreASCIIDigits() {
        let found = errors(document(hierarchy: #"[{"level": "campaign", "digits": [1, 2], "names": {"١٢": "x"}}]"#))
        #expect(found.contains { $0.path.hasPrefix("$.source-identifier[0].names") })
    }

    /// Display spoofing: event and value names holding a bidi override, a zero-width character or a noncharacter are
    /// errors at their path; names in any script and emoji are fine.
    @Test func namesThatDisguiseThemselvesAreErrors() {
        let event = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "pur\u202Echase"}]}]}}"#
        let eventErrors = errors(document(window0: event))
        #expect(eventErrors.contains { $0.path == "$.versions[0].install.windows.0.fine.values[0].events[0].name" && $0.message.contains("U+202E") },
                "\(eventErrors)")
        let names = errors(document(hierarchy: #"[{"level": "campaign", "digits": [1, 2], "names": {"12": "Spring\u200Bsale", "13": "Sale\uFFFE"}}]"#))
        #expect(names.contains { $0.path == "$.source-identifier[0].names.12" }, "\(names)")
        #expect(names.contains { $0.path == "$.source-identifier[0].names.13" }, "\(names)")
        let plain = SchemaReader.check(document(hierarchy: #"[{"level": "campaign", "digits": [1, 2], "names": {"12": "Café 🎮 東京"}}]"#))
        #expect(plain.diagnostics.filter { $0.severity == .error }.isEmpty, "\(plain.diagnostics)")
    }
}
