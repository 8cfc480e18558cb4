import ConversionSchema
import CountersignEncoder
import Foundation
import JWS
import PostbackMint
import Testing
@testable import SchemaDesign

/// A suggested schema checks, keeps a base schema's other fields, and its score agrees with a recomputation from the
/// users' revenue through the decoder ingest uses.
@Suite struct SchemaSuggestionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// 2,000 users, one in five paying a few store prices within 35 days, half of the purchases in the first two.
    static func history(seed: UInt64) -> RevenueHistory {
        var generator = SeededGenerator(seed: seed)
        var revenue: [[Int64]] = Array(repeating: [], count: 3)
        for _ in 0..<2_000 {
            var sums: [Int64] = [0, 0, 0]
            if Int.random(in: 0..<5, using: &generator) == 0 {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let price = [990_000, 4_990_000, 9_990_000, 49_990_000].randomElement(using: &generator)!
                    let hour = Bool.random(using: &generator) ? Double.random(in: 0..<48, using: &generator) : Double.random(in: 48..<840, using: &generator)
                    for (window, end) in RevenueHistory.windowEnds.enumerated() where hour < end { sums[window] += Int64(price) }
                }
            }
            for window in 0..<3 { revenue[window].append(sums[window]) }
        }
        return RevenueHistory(currency: "USD", revenue: revenue)
    }

    static func checked(_ document: JSONValue) throws -> ConversionSchema {
        let check = SchemaReader.check(Array(document.prettyPrinted.utf8))
        #expect(check.errors.isEmpty, "\(check.errors)")
        return try #require(check.schema)
    }

    @Test func aNewSchemaChecksAndItsScoreMatchesTheDecoder() throws {
        let history = Self.history(seed: 1)
        let options = SchemaSuggestion.Options(app: "1108187390", effectiveFrom: "2026-12-01T00:00:00Z", fineRanges: 12, minimumUsers: 8)
        let schema = try Self.checked(SchemaSuggestion.document(for: history, options: options))
        let at = try #require(schema.versions.last?.effectiveFrom)
        let windows = try #require(EncodingSchemaCompiler.compile(schema).version(at: at)?.install)
        let score = RevenueScore(rules: windows[0].fine, revenue: history.revenue[0], label: { String($0) })
        // Independently: each user's value by scanning every fine value's decoded range, then the decoder's middle.
        var decoded = 0.0
        var perValue: [Int: Int] = [:]
        for micros in history.revenue[0] {
            let revenue = Double(micros) / 1_000_000
            var chosen = 0
            if revenue > 0 {
                let ranges = (1...63).compactMap { value -> (Int, RevenueRange)? in
                    guard case .success(let result) = SchemaDecoder.decode(schema, conversionClass: .install, window: 0, fine: value, coarse: nil, sourceIdentifier: nil, at: at),
                          let range = result.revenue else { return nil }
                    return (value, range)
                }
                chosen = ranges.last { $0.1.min <= revenue }?.0 ?? ranges[0].0
                decoded += ranges.first { $0.0 == chosen }!.1.midpoint
            }
            perValue[chosen, default: 0] += 1
        }
        #expect(abs(score.decodedRevenue - decoded) < 1e-6)
        #expect(score.users == 2_000 && score.payingUsers == history.revenue[0].count { $0 > 0 })
        for row in score.rows { #expect(perValue[Int(row.value) ?? -1, default: 0] == row.users, "value \(row.value)") }
        #expect(score.rows.dropFirst().allSatisfy { $0.users >= 8 }, "every paying value stands for at least --min-users users")
        #expect(abs(score.decodedRevenue / score.trueRevenue - 1) < 0.05, "optimal ranges decode total revenue closely")
        for window in windows { #expect(window.coarse.filter { $0.revenue != nil }.count == 2, "medium and high are revenue ranges") }
    }

    @Test func aBaseSchemaGetsANewVersionWithItsRevenueFieldReplaced() throws {
        let base = try JSONParser.parse(Array(Data(contentsOf: Self.root.appendingPathComponent("examples/schemas/game.json"))))
        let options = SchemaSuggestion.Options(app: "1108187390", effectiveFrom: "2027-01-01T00:00:00Z", minimumUsers: 5)
        let written = try SchemaSuggestion.document(replacing: "revenue", in: base, for: Self.history(seed: 2), options: options).get()
        let schema = try Self.checked(written)
        let before = try #require(SchemaReader.check(Array(base.prettyPrinted.utf8)).schema)
        #expect(schema.versions.count == before.versions.count + 1)
        #expect(Array(schema.versions.dropLast()) == before.versions, "earlier versions are kept as they were")
        guard case .bitFields(let fields)? = schema.versions.last?.classes[.install]?.fine(window: 0),
              case .bitFields(let oldFields)? = before.versions.last?.classes[.install]?.fine(window: 0) else {
            Issue.record("bit fields expected")
            return
        }
        #expect(fields.first { $0.name == "progress" } == oldFields.first { $0.name == "progress" }, "the other fields are kept")
        let revenue = try #require(fields.first { $0.name == "revenue" })
        #expect((3...16).contains(revenue.values.count), "4 bits: value 0 and at most 15 ranges, here \(revenue.values.count)")
    }

    @Test func aBaseWithoutTheFieldIsRefusedWithWhatItHas() throws {
        let base = try JSONParser.parse(Array(Data(contentsOf: Self.root.appendingPathComponent("examples/schemas/game.json"))))
        let options = SchemaSuggestion.Options(app: "1108187390", effectiveFrom: "2027-01-01T00:00:00Z")
        guard case .failure(let problem) = SchemaSuggestion.document(replacing: "money", in: base, for: Self.history(seed: 3), options: options) else {
            Issue.record("accepted a field the schema does not have")
            return
        }
        #expect(problem.message.contains("no bit field named money") && problem.message.contains("revenue, progress"))
    }
}
