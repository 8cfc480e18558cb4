import ArgumentParser
import Foundation
import Store

/// `countersign performance`: the same report as `GET /v1/performance`, on the database file.
struct PerformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "performance",
        abstract: "What installs cost and returned: spend, eCPI, ROAS, and what networks claimed against what Apple signed.",
        discussion: """
        Dimensions for --by (docs/metrics.md):
        \(PerformanceQuery.Dimension.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Metrics in every row (after currency, the row's money currency):
        \(PerformanceMetric.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Example: countersign performance --by ad_network,campaign --from 2026-11-01 --to 2026-12-01 --currency USD
        """
    )

    @OptionGroup var database: DatabaseOption
    @Option(help: "Comma-separated dimensions to group by.") var by: String?
    @Option(help: "The first day (ISO 8601; without a zone, in --tz).") var from: String?
    @Option(help: "The day after the last (ISO 8601; without a zone, in --tz).") var to: String?
    @Option(help: "IANA time zone of the days (default: the --app's registered zone, else UTC).") var tz: String?
    @Option(help: "The advertised app's id.") var app: String?
    @Option(name: .customLong("ad-network"), help: "An ad network id.") var adNetwork: String?
    @Option(help: "A campaign (digits 1-2 of the source identifier, as the network's report names it).") var campaign: String?
    @Option(help: "A two-letter country code.") var country: String?
    @Option(help: "Convert every amount into this ISO 4217 currency with the imported exchange rates.") var currency: String?
    @Option(help: "install (the estimated install day, default) or arrival (the day postbacks arrived).") var basis: String?
    @Option(help: "table, csv, json or ndjson.") var format = "table"

    func run() async throws {
        var pairs: [(String, String)] = []
        let options: [(String, String?)] = [
            ("by", by), ("from", from), ("to", to), ("tz", tz), ("app", app), ("ad_network", adNetwork), ("campaign", campaign),
            ("country", country), ("currency", currency), ("basis", basis),
        ]
        for (name, value) in options { if let value { pairs.append((name, value)) } }
        guard let output = ReportFormat(rawValue: format) else { throw CLIFailure.usage("--format must be table, csv, json or ndjson") }
        let store = try database.open()
        defer { store.close() }
        if tz == nil, let app = app.flatMap({ Int64($0) }), let zone = try await store.apps.timeZone(app: app) { pairs.append(("tz", zone)) }
        let query: PerformanceQuery
        do { query = try PerformanceQuery.parse(pairs) } catch { throw CLIFailure.usage(error.commandLineDescription) }
        let table = try await store.performance.report(query)
        FileHandle.standardOutput.write(Data(output.render(table).utf8))
    }
}
