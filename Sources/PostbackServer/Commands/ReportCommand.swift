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
    @OptionGroup var period: PeriodOptions
    @Option(help: "IANA time zone of day and week buckets and of dates without a zone (default: the --app's registered zone, else UTC).") var tz: String?
    @Option(help: "The advertised app's id.") var app: String?
    @Option(name: .customLong("ad-network"), help: "An ad network id.") var adNetwork: String?
    @Option(name: .customLong("source-prefix"), help: "Source identifiers starting with these digits.") var sourcePrefix: String?
    @Option(help: "download, redownload, re-engagement or install.") var type: String?
    @Option(help: "0, 1 or 2.") var window: String?
    @Option(name: .customLong("did-win"), help: "true or false.") var didWin: String?
    @Option(help: "click or view.") var interaction: String?
    @Option(help: "A two-letter country code (an unsigned field).") var country: String?
    @Option(help: "production or development.") var environment: String?
    @Option(help: "The lowest tier the fields allow, 0-3.") var tier: String?
    @Option(name: .customLong("protocol"), help: "aak or skan.") var family: String?
    @Option(help: "An ISO 4217 currency code: postbacks whose revenue is in it.") var currency: String?
    @Flag(name: .customLong("include-uncounted"), help: "Include unverifiable and development postbacks.") var includeUncounted = false
    @OptionGroup var metrics: MetricsOption
    @OptionGroup var output: OutputOption

    /// The metrics a table shows when `--metrics` is not given: what fits a 120-column terminal next to two dimensions.
    static let compact: [String] = [ReportMetric.installs, .reEngagements, .postbacks, .events, .revenueMin, .revenueMax].map(\.rawValue)

    func run() async throws {
        var pairs: [(String, String)] = []
        let options: [(String, String?)] = [
            ("by", by), ("tz", tz), ("app", app), ("ad_network", adNetwork), ("source_prefix", sourcePrefix),
            ("type", type), ("window", window), ("did_win", didWin), ("interaction", interaction), ("country", country),
            ("environment", environment), ("tier", tier), ("protocol", family), ("currency", currency),
        ]
        for (name, value) in options { if let value { pairs.append((name, value)) } }
        if includeUncounted { pairs.append(("include_uncounted", "true")) }
        let output = try self.output.chosen()
        let store = try database.open()
        // A report of one registered app, without --tz, counts days in the app's registered time zone.
        let appZone = if tz == nil, let app = app.flatMap({ Int64($0) }) { try await store.apps.timeZone(app: app) } else { String?.none }
        if let appZone { pairs.append(("tz", appZone)) }
        pairs += try period.pairs(now: Date(), zone: TimeZone(identifier: tz ?? appZone ?? "UTC") ?? .gmt)
        let query: ReportQuery
        do { query = try ReportQuery.parse(pairs) } catch { throw CLIFailure.usage(error.commandLineDescription) }
        let table = try metrics.select(try await store.reports.report(query), all: ReportMetric.allCases.map(\.rawValue), compact: Self.compact, output: output)
        FileHandle.standardOutput.write(Data(output.render(table).utf8))
    }
}
