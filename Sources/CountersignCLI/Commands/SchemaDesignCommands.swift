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
            if let base, let baseDocument, let effectiveFrom, let start = Timestamp.parse(effectiveFrom),
               let last = SchemaReader.check(Array(baseDocument.serialized.utf8)).schema?.versions.last, start <= last.effectiveFrom {
                throw CLIFailure.usage("--effective-from must be later than \(base)'s last version (\(Timestamp.format(last.effectiveFrom))): the new version follows it")
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
