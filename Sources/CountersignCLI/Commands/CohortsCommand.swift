import CountersignServer
import ArgumentParser
import Foundation
import Store

/// `countersign cohorts`: the same curves as `GET /v1/cohorts`, on the database file.
struct CohortsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cohorts",
        abstract: "What an install returned by days 2, 7 and 35, per install week or pooled, over the weeks whose windows have closed.",
        discussion: """
        Cohorts are install weeks (ISO, Monday first, in the report's zone). Each point (D2, D7, D35) adds up only the
        weeks whose window has closed (docs/metrics.md, Maturity), so young weeks never pull a curve down; without week
        in --by, the weeks of the period are pooled per row.

        Dimensions for --by: \(CohortCurveReader.dimensions.map(\.rawValue).joined(separator: ", ")) (as countersign performance defines them).

        Metrics after currency, the row's money currency (--metrics picks them; a table shows \(Self.compact.joined(separator: ", ")) unless asked):
        \(CohortMetric.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Examples:
          countersign cohorts --by ad_network_name --last 12w --currency USD
          countersign cohorts --by week,ad_network_name --from 2026-09-01 --to 2026-11-01 --app 1108187390
        """
    )

    @OptionGroup var database: DatabaseOption
    @Option(help: "Comma-separated dimensions to group by.") var by: String?
    @OptionGroup var period: PeriodOptions
    @Option(help: "IANA time zone of the weeks (default: the --app's registered zone, else UTC).") var tz: String?
    @Option(help: "The advertised app's id.") var app: String?
    @Option(name: .customLong("ad-network"), help: "An ad network id.") var adNetwork: String?
    @Option(help: "A campaign, as countersign performance takes it.") var campaign: String?
    @Option(help: "A two-letter country code.") var country: String?
    @Option(help: "Convert every amount into this ISO 4217 currency with the imported exchange rates.") var currency: String?
    @OptionGroup var metrics: MetricsOption
    @OptionGroup var output: OutputOption

    /// The metrics a table shows when `--metrics` is not given.
    static let compact: [String] = [CohortMetric.installs, .spend, .revenuePerInstallD2, .revenuePerInstallD7, .revenuePerInstallD35,
                                    .roasD2, .roasD7, .roasD35].map(\.rawValue)

    func run() async throws {
        var pairs: [(String, String)] = []
        for (name, value) in [("by", by), ("tz", tz), ("app", app), ("ad_network", adNetwork), ("campaign", campaign), ("country", country), ("currency", currency)] {
            if let value { pairs.append((name, value)) }
        }
        let output = try self.output.chosen()
        let store = try database.open()
        defer { store.close() }
        pairs += try await period.pairs(tz: tz, app: app, store: store)
        let query: PerformanceQuery
        do { query = try CohortCurveReader.query(pairs) } catch { throw CLIFailure.usage(error.commandLineDescription) }
        var full = try await store.cohorts.report(query, maximumGroups: nil)
        if output == .table {
            var whole = query
            whole.groupBy = []
            full = PerformanceCommand.withTotal(full, total: try await store.cohorts.report(whole, maximumGroups: nil), dimensions: query.groupBy.count)
        }
        let table = try metrics.select(full, all: CohortMetric.allCases.map(\.rawValue), compact: Self.compact, output: output)
        let shown = output == .table ? PerformanceCommand.rounded(table, decimals: { CohortMetric(rawValue: $0)?.tableDecimals }) : table
        FileHandle.standardOutput.write(Data(output.render(shown).utf8))
    }
}
