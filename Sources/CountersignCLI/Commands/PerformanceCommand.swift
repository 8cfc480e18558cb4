import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Store

/// `countersign performance`: the same report as `GET /v1/performance`, on the database file.
struct PerformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "performance",
        abstract: "What installs cost and returned: spend, eCPI, ROAS, and what networks claimed against what Apple signed.",
        discussion: """
        Dimensions for --by (docs/metrics.md):
        \(PerformanceQuery.Dimension.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Metrics after currency, the row's money currency (--metrics picks them; a table shows \(Self.compact.joined(separator: ", ")) unless asked):
        \(PerformanceMetric.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Examples:
          countersign performance --by ad_network,campaign --from 2026-11-01 --to 2026-12-01 --currency USD
          countersign performance --by ad_network --last 30d --metrics installs,claimed_installs,install_gap,forged
        """
    )

    @OptionGroup var database: DatabaseOption
    @Option(help: "Comma-separated dimensions to group by.") var by: String?
    @OptionGroup var period: PeriodOptions
    @Option(help: "IANA time zone of the days (default: the --app's registered zone, else UTC).") var tz: String?
    @Option(help: "The advertised app's id.") var app: String?
    @Option(name: .customLong("ad-network"), help: "An ad network id.") var adNetwork: String?
    @Option(help: "A campaign (digits 1-2 of the source identifier, as the network's report names it).") var campaign: String?
    @Option(help: "A two-letter country code.") var country: String?
    @Option(help: "Convert every amount into this ISO 4217 currency with the imported exchange rates.") var currency: String?
    @Option(help: "install (the estimated install day, default) or arrival (the day postbacks arrived).") var basis: String?
    @OptionGroup var metrics: MetricsOption
    @OptionGroup var output: OutputOption

    /// `table` with each metric's figures to the decimals a table shows (``PerformanceMetric/tableDecimals``), rounded
    /// half up: 914.710037 reads 914.71, an eCPI of 14.54086 reads 14.54 (issue 49, finding 8).
    static func rounded(_ table: ReportTable, decimals places: (String) -> Int? = { PerformanceMetric(rawValue: $0)?.tableDecimals }) -> ReportTable {
        let decimals = table.columns.map(places)
        return ReportTable(columns: table.columns, rows: table.rows.map { row in
            zip(row, decimals).map { cell, places in
                guard let places, case .number(let text) = cell, var value = Decimal(string: text) else { return cell }
                var result = Decimal()
                NSDecimalRound(&result, &value, places, .plain)
                return .number(Self.fixed(result, places))
            }
        }, timeZone: table.timeZone, dayBasis: table.dayBasis)
    }

    /// `value` with exactly `places` decimals.
    static func fixed(_ value: Decimal, _ places: Int) -> String {
        let text = NSDecimalNumber(decimal: value).stringValue
        let parts = text.split(separator: ".", maxSplits: 1)
        let fraction = parts.count > 1 ? String(parts[1]) : ""
        return String(parts[0]) + "." + fraction + String(repeating: "0", count: max(0, places - fraction.count))
    }

    /// `table` with a last row `total`: the same report without its dimensions (`total`), every figure computed as the
    /// rows' are, never added up from rounded cells; unchanged with fewer than two rows or no dimensions.
    static func withTotal(_ table: ReportTable, total: ReportTable, dimensions: Int) -> ReportTable {
        guard dimensions > 0, table.rows.count > 1, let row = total.rows.first else { return table }
        let label: [JSONValue] = [.string("total")] + Array(repeating: .string(""), count: dimensions - 1)
        return ReportTable(columns: table.columns, rows: table.rows + [label + row], timeZone: table.timeZone, dayBasis: table.dayBasis)
    }

    /// The metrics a table shows when `--metrics` is not given: what an analyst reads first, in 120 columns.
    static let compact: [String] = [PerformanceMetric.installs, .claimedInstalls, .spend, .ecpi, .revenueMid, .roasMid].map(\.rawValue)

    func run() async throws {
        var pairs: [(String, String)] = []
        let options: [(String, String?)] = [
            ("by", by), ("tz", tz), ("app", app), ("ad_network", adNetwork), ("campaign", campaign),
            ("country", country), ("currency", currency), ("basis", basis),
        ]
        for (name, value) in options { if let value { pairs.append((name, value)) } }
        let output = try self.output.chosen()
        let store = try database.open()
        defer { store.close() }
        pairs += try await period.pairs(tz: tz, app: app, store: store)
        let query: PerformanceQuery
        do { query = try PerformanceQuery.parse(pairs) } catch { throw CLIFailure.usage(error.commandLineDescription) }
        // The CLI reads the database file itself: every group, no cap (the server's is --performance-max-groups).
        var full = try await store.performance.report(query, maximumGroups: nil)
        if output == .table {
            var whole = query
            whole.groupBy = []
            full = Self.withTotal(full, total: try await store.performance.report(whole, maximumGroups: nil), dimensions: query.groupBy.count)
        }
        var table = try metrics.select(full, all: PerformanceMetric.allCases.map(\.rawValue), compact: Self.compact, output: output)
        if output == .table { table = Self.rounded(table) }
        FileHandle.standardOutput.write(Data(output.render(table).utf8))
        if let note = full.columns.firstIndex(of: PerformanceMetric.note.rawValue), !table.columns.contains(PerformanceMetric.note.rawValue),
           full.rows.contains(where: { $0[note] != .null }) {
            FileHandle.standardError.write(Data("countersign: some rows have a note on figures left blank; add note to --metrics to read it\n".utf8))
        }
        // The last days are incomplete until Apple's delays pass: a table says so (issue 49, finding 4).
        if output == .table, let maturity = full.columns.firstIndex(of: PerformanceMetric.window0Maturity.rawValue),
           !table.columns.contains(PerformanceMetric.window0Maturity.rawValue) {
            let young = full.rows.filter { $0[maturity] != .string(WindowMaturity.closed.rawValue) }.count
            if young > 0 {
                FileHandle.standardError.write(Data(("countersign: \(young) row\(young == 1 ? "" : "s") hold\(young == 1 ? "s" : "") days still receiving first-window "
                    + "postbacks, so installs will grow; window_0_maturity in --metrics shows which (docs/metrics.md, Maturity)\n").utf8))
            }
        }
    }
}
