import CountersignServer
import ArgumentParser
import Foundation
import Store

/// `countersign report`: the same reports as `GET /v1/reports`, on the database file.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Report counted conversions grouped by campaign, window, day and more.",
        discussion: """
        Dimensions for --by (docs/metrics.md):
        \(ReportQuery.Dimension.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Metrics (--metrics picks them; a table shows \(Self.compact.joined(separator: ", ")) unless asked):
        \(ReportMetric.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Examples:
          countersign report --by campaign,window --from 2026-11-01
          countersign report --by day,campaign --last 7d --metrics installs,revenue_mid
          countersign report --by campaign --from yesterday --format csv
        """
    )

    @OptionGroup var database: DatabaseOption
    @Option(help: "Comma-separated dimensions to group by.") var by: String?
    @OptionGroup var filters: ReportFilterOptions
    @OptionGroup var metrics: MetricsOption
    @OptionGroup var output: OutputOption

    /// The metrics a table shows when `--metrics` is not given: what fits a 120-column terminal next to two dimensions.
    static let compact: [String] = [ReportMetric.installs, .reEngagements, .postbacks, .events, .revenueMin, .revenueMax].map(\.rawValue)

    func run() async throws {
        let output = try self.output.chosen()
        let store = try database.open()
        let query = try await filters.query(store, by: by)
        let table = try metrics.select(try await store.reports.report(query), all: ReportMetric.allCases.map(\.rawValue), compact: Self.compact, output: output)
        FileHandle.standardOutput.write(Data(output.render(table).utf8))
    }
}
