import CountersignServer
import ArgumentParser
import Store

/// `--metrics` of `report` and `performance`: the metric columns shown after the dimensions and the currency.
struct MetricsOption: ParsableArguments {
    @Option(help: "Comma-separated metrics in the order to show them, or all (default: a compact set for table, all for csv, json and ndjson).")
    var metrics: String?

    /// `table` with the metrics asked for: every column that is not one of `all` (dimensions, currency) in its place,
    /// then the chosen metrics in the order given; `compact` when nothing was asked and the output is a table.
    func select(_ table: ReportTable, all: [String], compact: [String], output: ReportFormat) throws(CLIFailure) -> ReportTable {
        let chosen: [String]
        switch metrics {
        case nil: guard output == .table else { return table }; chosen = compact
        case "all": return table
        case let text?:
            chosen = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
            if let unknown = chosen.first(where: { !all.contains($0) }) {
                throw CLIFailure.usage("--metrics: \(unknown.isEmpty ? "an empty name" : unknown) is not a metric; choose from \(all.joined(separator: ", ")), or all")
            }
        }
        var seen = Set<String>()
        let metrics = chosen.filter { seen.insert($0).inserted }
        let kept = table.columns.indices.filter { !all.contains(table.columns[$0]) } + metrics.compactMap { table.columns.firstIndex(of: $0) }
        return ReportTable(columns: kept.map { table.columns[$0] }, rows: table.rows.map { row in kept.map { row[$0] } }, timeZone: table.timeZone, dayBasis: table.dayBasis)
    }
}
