import Testing
import JWS
@testable import ConversionSchema

/// One test per static check: the message and the JSON path.
@Suite struct StaticCheckTests {
    /// A minimal valid schema with `window0` as the install window 0 definition.
    func document(window0: String = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "open"}]}]}}"#,
                  extraRoot: String = "", versions: String? = nil) -> [UInt8] {
        let versionList = versions ?? #"[{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"0": \#(window0)}}}]"#
        return Array(#"{"format": "countersign.conversion-schema/1", "app": "123", "currency": "USD"\#(extraRoot), "versions": \#(versionList)}"#.utf8)
    }

    func only(_ severity: SchemaDiagnostic.Severity, _ bytes: [UInt8]) -> [SchemaDiagnostic] {
        SchemaReader.check(bytes).diagnostics.filter { $0.severity == severity }
    }

    let w0 = "$.versions[0].install.windows.0"

    @Test func minimalSchemaIsClean() {
        let check = SchemaReader.check(document())
        #expect(check.diagnostics.isEmpty)
        #expect(check.schema != nil)
    }

    @Test func fineValuesInLaterWindowsWarn() {
        let fine = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "open"}]}]}}"#
        let versions = #"[{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"0": \#(fine), "2": \#(fine)}}}]"#
        let warnings = only(.warning, document(versions: versions))
        #expect(warnings == [SchemaDiagnostic(severity: .warning, path: "$.versions[0].install.windows.2.fine",
                                              message: "Apple sends only coarse values in window 2; this fine mapping is never used")])
        #expect(only(.warning, document()).isEmpty)
    }

    @Test func valueOutOfRange() {
        let errors = only(.error, document(window0: #"{"fine": {"values": [{"value": 64, "events": []}]}}"#))
        #expect(errors.contains { $0.path == "\(w0).fine.values[0]" && $0.message == "value 64 is out of range 0-63" })
    }

    @Test func overlappingRevenueRanges() {
        let window = #"{"fine": {"values": [{"value": 0, "events": [{"name": "buy", "revenue": {"min": 0, "max": 5}}]}, {"range": [1, 63], "events": [{"name": "buy", "revenue": {"min": 3, "max": 10}}]}]}}"#
        let errors = only(.error, document(window0: window))
        #expect(errors == [SchemaDiagnostic(severity: .error, path: "\(w0).fine.values[1]", message: "revenue range 3-10 of value 1-63 overlaps 0-5 of value 0")])
    }

    @Test func gappedRevenueRangesWarn() {
        let window = #"{"fine": {"values": [{"value": 0, "events": [{"name": "buy", "revenue": {"min": 0, "max": 5}}]}, {"range": [1, 63], "events": [{"name": "buy", "revenue": {"min": 6, "max": 10}}]}]}}"#
        let check = SchemaReader.check(document(window0: window))
        #expect(check.errors.isEmpty)
        #expect(check.warnings == [SchemaDiagnostic(severity: .warning, path: "\(w0).fine.values[1]", message: "gap in revenue ranges between 5 (value 0) and 6 (value 1-63)")])
    }

    @Test func duplicateValues() {
        let errors = only(.error, document(window0: #"{"fine": {"values": [{"range": [0, 63], "events": []}, {"value": 7, "events": []}]}}"#))
        #expect(errors == [SchemaDiagnostic(severity: .error, path: "\(w0).fine.values[1]", message: "value 7 is already defined at \(w0).fine.values[0]")])
    }

    @Test func undefinedValuesWarn() {
        let warnings = only(.warning, document(window0: #"{"fine": {"values": [{"range": [0, 9], "events": []}, {"value": 63, "events": []}]}}"#))
        #expect(warnings == [SchemaDiagnostic(severity: .warning, path: "\(w0).fine.values", message: "values 10-62 are undefined")])
    }

    @Test func undefinedCoarseValueWarns() {
        let warnings = only(.warning, document(window0: #"{"coarse": {"low": {"events": []}, "high": {"events": []}}}"#))
        #expect(warnings == [SchemaDiagnostic(severity: .warning, path: "\(w0).coarse", message: "coarse value medium is undefined")])
    }

    @Test func overlappingBitFields() {
        let window = #"{"fine": {"bits": [{"name": "a", "bits": [0, 3], "values": [{"range": [0, 15], "events": []}]}, {"name": "b", "bits": [3, 5], "values": [{"range": [0, 7], "events": []}]}]}}"#
        let errors = only(.error, document(window0: window))
        #expect(errors == [SchemaDiagnostic(severity: .error, path: "\(w0).fine.bits[1].bits", message: "bits 3-5 overlap another field's bits")])
    }

    @Test func bitFieldsBeyondSixBits() {
        let window = #"{"fine": {"bits": [{"name": "a", "bits": [4, 6], "values": []}]}}"#
        let errors = only(.error, document(window0: window))
        #expect(errors == [SchemaDiagnostic(severity: .error, path: "\(w0).fine.bits[0].bits", message: "bits 4-6 exceed the 6-bit conversion value (bits 0-5)")])
    }

    @Test func bitFieldValueOutOfRange() {
        let window = #"{"fine": {"bits": [{"name": "days", "bits": [4, 5], "values": [{"value": 4, "events": []}]}]}}"#
        let errors = only(.error, document(window0: window))
        #expect(errors.contains { $0.path == "\(w0).fine.bits[0].values[0]" && $0.message == "value 4 is out of range 0-3" })
    }

    @Test func unknownKeys() {
        let errors = only(.error, document(window0: #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "x", "revnue": 1}]}]}}"#))
        #expect(errors.count == 1)
        #expect(errors.first?.path == "\(w0).fine.values[0].events[0].revnue")
        #expect(errors.first?.message.hasPrefix("unknown key \"revnue\"") == true)
        #expect(only(.error, document(extraRoot: #", "colour": "blue""#)).first?.path == "$.colour")
    }

    @Test func mixedCurrencies() {
        let window = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "buy", "revenue": {"min": 1, "max": 2, "currency": "EUR"}}]}]}}"#
        let errors = only(.error, document(window0: window))
        #expect(errors == [SchemaDiagnostic(severity: .error, path: "\(w0).fine.values[0].events[0].revenue.currency", message: "mixed currencies: EUR where the schema uses USD")])
    }

    @Test func versionsOutOfOrder() {
        let versions = #"[{"version": 2, "effective-from": "2026-02-01T00:00:00Z", "install": {"windows": {}}}, {"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {}}}]"#
        let errors = only(.error, document(versions: versions))
        #expect(errors.contains(SchemaDiagnostic(severity: .error, path: "$.versions[1].version", message: "versions must increase: 1 follows 2")))
        #expect(errors.contains(SchemaDiagnostic(severity: .error, path: "$.versions[1].effective-from", message: "effective-from must be later than the previous version's")))
    }

    @Test func windowOutOfRangeIsAnUnknownKey() {
        let versions = #"[{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"3": {}}}}]"#
        #expect(only(.error, document(versions: versions)).first?.path == "$.versions[0].install.windows.3")
    }

    @Test func minAboveMax() {
        let window = #"{"fine": {"values": [{"range": [0, 63], "events": [{"name": "buy", "revenue": {"min": 5, "max": 2}}]}]}}"#
        #expect(only(.error, document(window0: window)) == [SchemaDiagnostic(severity: .error, path: "\(w0).fine.values[0].events[0].revenue", message: "min 5.0 is greater than max 2.0")])
    }

    @Test func sourceHierarchyOverlap() {
        let extra = #", "source-identifier": [{"level": "campaign", "digits": [1, 2]}, {"level": "group", "digits": [2, 3]}]"#
        #expect(only(.error, document(extraRoot: extra)) == [SchemaDiagnostic(severity: .error, path: "$.source-identifier[1].digits", message: "overlaps another level's digits")])
    }

    @Test func importsMMPCSV() throws {
        let csv = """
        value,coarse,window,event,min revenue,max revenue
        0,,0,install,,
        1,,0,purchase,0.99,4.99
        1,,0,tutorial_done,,
        ,high,1,purchase,5,100
        """
        let document = try CSVImport.schemaDocument(csv: csv, app: 42, currency: "USD", effectiveFrom: "2026-01-01T00:00:00Z")
        let check = SchemaReader.check(Array(document.serialized.utf8))
        #expect(check.errors.isEmpty, "\(check.errors)")
        let schema = try #require(check.schema)
        let one = try SchemaDecoder.decode(schema, conversionClass: .install, window: 0, fine: 1, coarse: nil, sourceIdentifier: nil, at: Timestamp("2026-02-01T00:00:00Z")).get()
        #expect(one.events.map(\.name) == ["purchase", "tutorial_done"])
        #expect(one.revenue?.max == 4.99)
        #expect(throws: CSVImport.Problem.self) { try CSVImport.schemaDocument(csv: "value,window,event\n99,0,x", app: 1, currency: "USD", effectiveFrom: "2026-01-01") }
    }

    /// The table is read by the one CSV reader the spend files use: a quoted field keeps its commas and quotes, and a
    /// problem names the line the record starts on, counting the lines inside quotes.
    @Test func anMMPTableIsReadAsEveryOtherCSV() throws {
        let csv = "value,window,event\r\n0,0,\"install, first \"\"open\"\"\"\r\n\r\n1,0,purchase\n"
        let document = try CSVImport.schemaDocument(csv: csv, app: 42, currency: "USD", effectiveFrom: "2026-01-01T00:00:00Z")
        let schema = try #require(SchemaReader.check(Array(document.serialized.utf8)).schema)
        let zero = try SchemaDecoder.decode(schema, conversionClass: .install, window: 0, fine: 0, coarse: nil, sourceIdentifier: nil, at: Timestamp("2026-02-01T00:00:00Z")).get()
        #expect(zero.events.map(\.name) == ["install, first \"open\""])
        do {
            _ = try CSVImport.schemaDocument(csv: "value,window,event\n0,0,\"a\nb\"\n9,0,x\"y", app: 1, currency: "USD", effectiveFrom: "2026-01-01")
            Issue.record("a quote inside an unquoted field was read")
        } catch {
            #expect(error.line == 4 && error.message.contains("quote"), "\(error)")
        }
    }
}
