import CountersignServer
import ArgumentParser

/// `--format` of every command that prints rows: `table` for a terminal (the default), `csv`, `json` or `ndjson`.
struct OutputOption: ParsableArguments {
    @Option(help: "table (default), csv, json or ndjson.") var format = "table"

    /// The format asked for, or a one-line usage error.
    func chosen() throws(CLIFailure) -> ReportFormat {
        guard let output = ReportFormat(rawValue: format) else { throw CLIFailure.usage("--format must be table, csv, json or ndjson") }
        return output
    }
}
