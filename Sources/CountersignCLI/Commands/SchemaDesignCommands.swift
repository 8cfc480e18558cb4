import CountersignServer
import ArgumentParser
import ConversionSchema
import CountersignEncoder
import Foundation
import JWS
import Postback
import SchemaDesign
import Spend
import Store

extension SchemaCommand {
    /// `countersign schema suggest`: a schema whose revenue ranges are optimal for the developer's own revenue.
    struct Suggest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a schema whose revenue ranges fit your users' revenue best, and print how well it tells it.",
            discussion: """
            REVENUE is a CSV with the header user,hours_since_install,amount,currency[,date][,event]: one row per purchase (amount 0
            for a user who installed and paid nothing). See docs/schemas.md#design-from-your-data.
            Examples:
              countersign schema suggest revenue.csv --app 1108187390 --output schema.json
              countersign schema suggest revenue.csv --base game.json --field revenue --effective-from 2026-12-10T00:00:00Z --output game.json
            Exit 0 written, 1 when the revenue file has errors (each printed with its line), 2 for a usage error.
            """
        )

        @Argument(help: "The revenue CSV file, or - for standard input.") var file: String
        @Option(help: "The advertised app's App Store id (default: the base schema's).") var app: AppID?
        @Option(help: "Write the schema here.") var output: String
        @Option(help: "The schema's currency; other currencies are converted (default: the base schema's, else USD).") var currency: String?
        @Option(help: "A bit-field schema to add a version to, with the revenue field's values replaced.") var base: String?
        @Option(help: "The base schema's revenue bit field.") var field = "revenue"
        @Option(help: "The most fine values for paying users in a new schema, 1-63.") var values = 63
        @Option(name: .customLong("min-users"), help: "The fewest users a value may stand for.") var minimumUsers = 10
        @Option(help: "The event that carries revenue.") var event = "purchase"
        @Option(help: "The new schema's name.") var name: String?
        @Option(name: .customLong("effective-from"), help: "When the new version takes effect (ISO 8601; default the start of today, UTC; needed with --base).")
        var effectiveFrom: String?
        @OptionGroup var rates: RateOptions
        @OptionGroup var format: OutputOption

        func validate() throws {
            guard (1...63).contains(values) else { throw ValidationError("--values must be 1 to 63") }
            guard minimumUsers >= 1 else { throw ValidationError("--min-users must be at least 1") }
            if let effectiveFrom, Timestamp.parse(effectiveFrom) == nil { throw ValidationError("--effective-from must be an ISO 8601 time such as 2026-12-10T00:00:00Z") }
            if base != nil, effectiveFrom == nil { throw ValidationError("--base adds a version: give its --effective-from, a few days after the app update that uses it ships") }
            if base == nil, app == nil { throw ValidationError("give --app, the advertised app's App Store id") }
            if let currency, !CurrencyCode.isKnown(currency) { throw ValidationError("--currency must be an ISO 4217 code such as USD") }
        }

        func run() async throws {
            let format = try self.format.chosen()
            let baseDocument: JSONValue? = try base.map { path throws(CLIFailure) in
                let bytes = try readInput(path)
                guard SchemaReader.check(bytes).errors.isEmpty, let value = try? JSONParser.parse(bytes) else {
                    throw CLIFailure.usage("\(path) does not check; run countersign schema check \(path)")
                }
                return value
            }
            let currency = self.currency ?? baseDocument?.object?["currency"]?.string ?? "USD"
            let history = try await rates.history(file, currency: currency)
            let options = SchemaSuggestion.Options(
                app: app?.description ?? baseDocument?.object?["app"]?.string ?? "", name: name,
                effectiveFrom: effectiveFrom ?? Timestamp.format(Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)),
                event: event, fineRanges: values, minimumUsers: minimumUsers)
            let document: JSONValue
            if let baseDocument {
                switch SchemaSuggestion.document(replacing: field, in: baseDocument, for: history, options: options) {
                case .success(let value): document = value
                case .failure(let problem): throw CLIFailure.usage(problem.message)
                }
            } else {
                document = SchemaSuggestion.document(for: history, options: options)
            }
            let text = document.prettyPrinted + "\n"
            guard let schema = SchemaReader.check(Array(text.utf8)).schema else { throw CLIFailure.rejected("the suggested schema does not check; report this as a bug") }
            guard FileManager.default.createFile(atPath: output, contents: Data(text.utf8)) else { throw CLIFailure.usage("cannot write \(output); check the path") }
            let at = schema.versions.last?.effectiveFrom ?? Date()
            FileHandle.standardError.write(Data("wrote \(output): \(history.users) users, \(history.revenue[0].filter { $0 > 0 }.count) paying in window 0\n".utf8))
            print(format.render(SchemaScoreTable.table(schema, history: history, at: at)), terminator: "")
        }
    }

    /// `countersign schema score`: how well a schema tells the developer's own revenue.
    struct Score: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print how well a schema tells your users' revenue: per value, and true against decoded revenue per user.",
            discussion: """
            REVENUE is the CSV schema suggest reads. Give the schema as a file, or --app for the app's current revision in the database.
            Examples:
              countersign schema score revenue.csv --schema schema.json
              countersign schema score revenue.csv --app 1108187390
            """
        )

        @Argument(help: "The revenue CSV file, or - for standard input.") var file: String
        @Option(help: "The schema file.") var schema: String?
        @Option(help: "Score this app's current schema revision instead of a file.") var app: AppID?
        @Option(help: "Score the version in force at this time (ISO 8601; default the latest version).") var at: String?
        @OptionGroup var rates: RateOptions
        @OptionGroup var format: OutputOption

        func validate() throws {
            guard (schema == nil) != (app == nil) else { throw ValidationError("give exactly one of --schema FILE or --app APP") }
            if let at, Timestamp.parse(at) == nil { throw ValidationError("--at must be an ISO 8601 time such as 2026-11-01T00:00:00Z") }
        }

        func run() async throws {
            let format = try self.format.chosen()
            let loaded: ConversionSchema
            if let schema {
                loaded = try SchemaCommand.load(schema)
            } else if let app {
                let store = try rates.database.open()
                defer { store.close() }
                guard let current = try await store.schemas.document(app: app), let schema = SchemaReader.check(Array(current.document.utf8)).schema else {
                    throw CLIFailure.usage("app \(app) has no schema; upload one with countersign schema upload FILE")
                }
                loaded = schema
            } else {
                throw CLIFailure.usage("give --schema FILE or --app APP")
            }
            guard let currency = loaded.currency else { throw CLIFailure.usage("the schema gives no revenue (it has no currency); nothing to score") }
            let history = try await rates.history(file, currency: currency)
            print(format.render(SchemaScoreTable.table(loaded, history: history, at: at.flatMap { Timestamp.parse($0) } ?? loaded.versions.last?.effectiveFrom ?? Date())), terminator: "")
        }
    }
}

extension SchemaCommand {
    /// `countersign schema codegen --swift`: the schema and the encoder as one Swift file an app compiles.
    struct Codegen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write one dependency-free Swift file that sets an app's conversion values by its schema.",
            discussion: """
            The file holds the encoder (the same code as Packages/CountersignEncoder) and the schema as a literal, EncodingSchema.app<APP>.
            See docs/app-integration.md. Examples:
              countersign schema codegen --swift examples/schemas/game.json --output ConversionSchema.swift
              countersign schema codegen --swift --app 1108187390 --output ConversionSchema.swift
            """
        )

        @Flag(help: "Write Swift (the one language so far).") var swift = false
        @Argument(help: "The schema file (or give --app).") var file: String?
        @Option(help: "The app whose current revision to use, from the database.") var app: AppID?
        @Option(help: "Write here instead of standard output.") var output: String?
        @OptionGroup var database: DatabaseOption

        func validate() throws {
            guard swift else { throw ValidationError("give --swift: Swift is the language codegen writes") }
            guard (file == nil) != (app == nil) else { throw ValidationError("give a schema FILE or --app APP") }
        }

        func run() async throws {
            let compiled: EncodingSchema
            if let file {
                compiled = EncodingSchemaCompiler.compile(try SchemaCommand.load(file))
            } else if let app {
                let store = try database.open()
                defer { store.close() }
                guard let current = try await store.schemas.document(app: app), let schema = SchemaReader.check(Array(current.document.utf8)).schema else {
                    throw CLIFailure.usage("app \(app) has no schema; upload one with countersign schema upload FILE")
                }
                compiled = EncodingSchemaCompiler.compile(schema, revision: current.revision)
            } else {
                throw CLIFailure.usage("give a schema FILE or --app APP")
            }
            let text = SwiftCodegen.file(for: compiled)
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: Data(text.utf8)) else { throw CLIFailure.usage("cannot write \(output); check the path") }
            } else {
                print(text, terminator: "")
            }
        }
    }
}

/// Where exchange rates for a revenue file come from: `--rates FILE`, else the rates imported into the database.
struct RateOptions: ParsableArguments {
    @Option(help: "Exchange rates (date,from,to,rate), for amounts in other currencies (default: those imported with spend rates).") var rates: String?
    @OptionGroup var database: DatabaseOption

    /// The revenue file at `path` in `currency`, or exit 1 with every problem printed.
    func history(_ path: String, currency: String) async throws -> RevenueHistory {
        var known: [ExchangeRate] = []
        if let rates {
            switch ExchangeRateFile.read(try SpendCommand.read(rates)) {
            case .failure(let problems): throw SpendCommand.refused(problems, file: rates)
            case .success(let read): known = read
            }
        } else if let store = database.database == nil ? try? database.open() : try database.open() {
            defer { store.close() }
            known = try await store.spend.rates()
        }
        switch RevenueHistoryFile.read(try SpendCommand.read(path), currency: currency, rates: known) {
        case .success(let history): return history
        case .failure(let problems):
            for problem in problems.problems { FileHandle.standardError.write(Data("\(path): \(problem.description)\n".utf8)) }
            throw CLIFailure.rejected("\(path) has \(problems.total) problem\(problems.total == 1 ? "" : "s"); fix them and run again")
        }
    }
}

/// The score of every window a schema defines, as rows: per value, then all users and paying users.
enum SchemaScoreTable {
    static func table(_ schema: ConversionSchema, history: RevenueHistory, at time: Date) -> ReportTable {
        var rows: [[JSONValue]] = []
        guard let version = EncodingSchemaCompiler.compile(schema).version(at: time), let windows = version.install else {
            return ReportTable(columns: columns, rows: [])
        }
        for (window, coarse) in [(0, false)] + windows.indices.map({ ($0, true) }) {
            let score = coarse ? RevenueScore(rules: windows[window].coarse, revenue: history.revenue[window], label: \.rawValue)
                : RevenueScore(rules: windows[window].fine, revenue: history.revenue[window], label: { String($0) })
            guard !score.rows.isEmpty else { continue }
            let kind: JSONValue = .string(coarse ? "coarse" : "fine")
            for row in score.rows {
                rows.append([.number(String(window)), kind, .string(row.value), .number(String(row.users)),
                             row.revenue.map { money($0.min) } ?? .null, row.revenue.map { money($0.max) } ?? .null,
                             money(row.trueMean), money(row.decoded), money(row.meanAbsoluteError)])
            }
            let paying = Double(max(score.payingUsers, 1))
            let everyone = Double(max(score.users, 1))
            rows.append([.number(String(window)), kind, .string("all users"), .number(String(score.users)), .null, .null,
                         money(score.trueRevenue / everyone), money(score.decodedRevenue / everyone), money(score.absoluteError / everyone)])
            rows.append([.number(String(window)), kind, .string("paying users"), .number(String(score.payingUsers)), .null, .null,
                         money(score.trueRevenue / paying), money(score.decodedPayingRevenue / paying), .null])
        }
        return ReportTable(columns: columns, rows: rows)
    }

    static let columns = ["window", "values", "value", "users", "min", "max", "true_mean", "decoded", "mean_abs_error"]

    /// An amount with two decimals.
    private static func money(_ amount: Double) -> JSONValue { .number(String(format: "%.2f", amount)) }
}
