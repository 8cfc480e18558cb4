import Foundation
import Testing
import TestSupport
import ConversionSchema

/// `schema suggest` and `schema score` as a developer runs them: files, exit codes and one-line errors.
@Suite struct SchemaDesignCLITests {
    static let revenue = Checkout.root.appendingPathComponent("examples/revenue.csv").path
    static let rates = Checkout.root.appendingPathComponent("examples/rates.csv").path

    @Test func suggestWritesASchemaThatChecksAndScoresAsItPrinted() async throws {
        let directory = Checkout.temporaryDirectory()
        let output = directory + "/schema.json"
        let suggested = try await countersign(["schema", "suggest", Self.revenue, "--app", "1108187390", "--rates", Self.rates,
                                               "--values", "6", "--min-users", "3", "--output", output, "--format", "csv"])
        #expect(suggested.status == 0, "\(suggested.stderr)")
        let check = SchemaReader.check(Array(try Data(contentsOf: URL(fileURLWithPath: output))))
        #expect(check.errors.isEmpty)
        let scored = try await countersign(["schema", "score", Self.revenue, "--schema", output, "--rates", Self.rates, "--format", "csv"])
        #expect(scored.status == 0, "\(scored.stderr)")
        #expect(scored.stdout == suggested.stdout, "score of the written schema prints what suggest printed")
        let paying = try #require(scored.stdout.split(whereSeparator: \.isNewline).first { $0.hasPrefix("0,fine,paying users,") })
        #expect(paying.split(separator: ",", omittingEmptySubsequences: false)[3] == "45", "45 users paid in their first 48 hours")
    }

    @Test func aBadRevenueFileExitsOneWithItsLines() async throws {
        let directory = Checkout.temporaryDirectory()
        let file = directory + "/revenue.csv"
        try Data("user,hours_since_install,amount,currency\nu1,2,-4.99,USD\nu2,3,4.99,EUR\n".utf8).write(to: URL(fileURLWithPath: file))
        let result = try await countersign(["schema", "suggest", file, "--app", "1108187390", "--output", directory + "/schema.json", "--database", directory + "/none.sqlite"])
        #expect(result.status == 2, "a --database that does not exist is a usage error: \(result.stderr)")
        let refused = try await countersign(["schema", "suggest", file, "--app", "1108187390", "--output", directory + "/schema.json", "--rates", Self.rates])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("line 2, amount: must not be negative"))
        #expect(refused.stderr.contains("line 3, date: is needed to convert EUR into USD"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/schema.json"), "nothing is written")
        let noSchema = try await countersign(["schema", "score", file, "--app", "1108187390", "--database", directory + "/none.sqlite"])
        #expect(noSchema.status == 2 && noSchema.stderr.contains("no database at"))
    }
}
