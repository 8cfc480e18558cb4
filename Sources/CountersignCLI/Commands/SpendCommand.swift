import CountersignServer
import ArgumentParser
import Foundation
import Postback
import JWS
import Spend
import Store

/// `countersign spend`: import what networks report they spent and claim, and exchange rates; list the imports.
struct SpendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spend",
        abstract: "Import spend and claimed installs as networks report them, and exchange rates; list what was imported.",
        discussion: """
        A file imports whole or not at all: every bad line is named (line, column, what is wrong) and nothing is stored.
        Importing a day of an app's ad network again replaces that day, so the same file twice changes nothing. Layouts:
        generic (date, app, ad_network, campaign, country, impressions, clicks, installs, re_engagements, spend,
        currency), applovin (AppLovin's Reporting API CSV), apple-ads (Apple Ads reports); docs/spend.md.

        Example: countersign spend import november.csv --format generic
        """,
        subcommands: [Import.self, Rates.self, Imports.self]
    )

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Import a spend and claims file.")
        @Argument(help: "The CSV file.") var file: String
        @Option(help: "generic, applovin or apple-ads (default generic).") var format = SpendFormat.generic.rawValue
        @Option(help: "The App Store id, for files without an app column.") var app: AppID?
        @Option(name: .customLong("ad-network"), help: "The ad network id, for files without one.") var adNetwork: String?
        @Option(help: "The spend's ISO 4217 currency, for files without a currency column.") var currency: String?
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            guard let layout = SpendFormat(rawValue: format) else {
                throw CLIFailure.usage("--format must be one of \(SpendFormat.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let bytes = try SpendCommand.read(file)
            let defaults = SpendDefaults(app: app, adNetwork: adNetwork, currency: currency?.uppercased())
            if let problem = defaults.problem { throw CLIFailure.usage("--\(problem.field.replacingOccurrences(of: "_", with: "-")): \(problem.message)") }
            switch SpendFile.read(bytes, format: layout, defaults: defaults) {
            case .failure(let problems): throw SpendCommand.refused(problems, file: file)
            case .success(let rows):
                let store = try database.open(create: true)
                defer { store.close() }
                let summary = try await store.spend.importSpend(rows, provenance: SpendCommand.provenance(file, format: layout.rawValue, bytes: bytes))
                print(JSONValue.object(summary.json).prettyPrinted)
            }
        }
    }

    struct Rates: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import daily exchange rates: date, from, to, rate (one unit of from is rate units of to).",
            discussion: "Example: countersign spend rates rates.csv  (a line: 2026-11-20,EUR,USD,1.0842)"
        )
        @Argument(help: "The CSV file.") var file: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let bytes = try SpendCommand.read(file)
            switch ExchangeRateFile.read(bytes) {
            case .failure(let problems): throw SpendCommand.refused(problems, file: file)
            case .success(let rates):
                let store = try database.open(create: true)
                defer { store.close() }
                let summary = try await store.spend.importRates(rates, provenance: SpendCommand.provenance(file, format: "rates", bytes: bytes))
                print(JSONValue.object(summary.json).prettyPrinted)
            }
        }
    }

    struct Imports: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the imports, newest first: what, who, when, which file.")
        @Option(help: "Imports listed at most.") var limit = 100
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            FileHandle.standardOutput.write(Data(output.render(try await store.spend.imports(limit: limit)).utf8))
        }
    }

    /// The bytes of `path` (`-` for standard input), or a one-line usage error.
    static func read(_ path: String) throws(CLIFailure) -> [UInt8] {
        let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: path)
        guard let data else { throw CLIFailure.usage("cannot read \(path); check the path") }
        return Array(data)
    }

    /// Every problem on standard error, one a line, then a failure that says nothing was stored.
    static func refused(_ problems: SpendFileProblems, file: String) -> CLIFailure {
        for problem in problems.problems { FileHandle.standardError.write(Data("\(file): \(problem.description)\n".utf8)) }
        let more = problems.total > problems.problems.count ? " (\(problems.problems.count) shown)" : ""
        return CLIFailure.rejected("\(file) was not imported: \(problems.total) problem\(problems.total == 1 ? "" : "s")\(more); fix them and import it again")
    }

    /// Who imports: the user running the command.
    static func provenance(_ file: String, format: String, bytes: [UInt8]) -> ImportProvenance {
        ImportProvenance(importedBy: "cli:" + (ProcessInfo.processInfo.environment["USER"] ?? NSUserName()), fileName: file == "-" ? nil : file,
                         format: format, bytes: bytes)
    }
}
