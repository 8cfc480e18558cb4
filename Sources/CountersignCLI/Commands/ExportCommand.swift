import CountersignServer
import ArgumentParser
import Foundation
import Store

/// `countersign export`: every conversion the filters select, as `GET /v1/conversions/export` streams it, written to
/// standard output a page at a time (memory stays flat whatever the size).
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every stored conversion the filters select, as CSV or NDJSON, oldest first.",
        discussion: """
        The columns are the conversions view's (docs/sql.md). Without --include-uncounted only counted postbacks.
        Examples:
          countersign export --from 2026-11-01 --to 2026-12-01 > november.csv
          countersign export --app 1108187390 --last 7d --format ndjson | jq .campaign
        """
    )

    @OptionGroup var database: DatabaseOption
    @OptionGroup var filters: ReportFilterOptions
    @Option(help: "csv (default) or ndjson.") var format = "csv"

    func run() async throws {
        guard ["csv", "ndjson"].contains(format) else { throw CLIFailure.usage("--format must be csv or ndjson") }
        let store = try database.open()
        defer { store.close() }
        let query = try await filters.query(store)
        let writer = TableWriter(format: format == "csv" ? .csv : .ndjson, columns: ReportReader.conversionColumns)
        try await store.reports.exportConversions(query, into: writer) { bytes in FileHandle.standardOutput.write(Data(bytes)) }
    }
}
