import CountersignServer
import ArgumentParser
import ConversionSchema
import Foundation
import JWS
import Postback

/// `countersign schema`: check, explain and import conversion-value schemas; upload them and read their history.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Check, upload and compare conversion-value schemas, explain what a value means, import MMP mapping tables.",
        subcommands: [Check.self, Upload.self, List.self, History.self, Diff.self, Explain.self, ImportCSV.self, Suggest.self, Score.self, Codegen.self]
    )

    /// Reads and checks a schema file; usage errors for unreadable files, exit 1 with the errors when it does not check.
    static func load(_ path: String) throws(CLIFailure) -> ConversionSchema {
        let check = SchemaReader.check(try readInput(path))
        guard let schema = check.schema else {
            for diagnostic in check.errors { FileHandle.standardError.write(Data("\(path): \(diagnostic)\n".utf8)) }
            throw CLIFailure.rejected("\(path) has \(check.errors.count) error(s); run countersign schema check")
        }
        return schema
    }

    /// `countersign schema check FILE`.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a schema file; print errors and warnings with their JSON paths.",
            discussion: "Exit 0 when there are no errors (warnings are printed), 1 when there are errors, 2 when the file cannot be read."
        )

        @Argument(help: "The schema JSON file.") var file: String

        func run() async throws {
            let check = SchemaReader.check(try readInput(file))
            for diagnostic in check.diagnostics { print("\(file): \(diagnostic)") }
            if !check.errors.isEmpty { throw CLIFailure.rejected("") }
            print("\(file): ok (\(check.schema?.versions.count ?? 0) version(s), \(check.warnings.count) warning(s))")
        }
    }

    /// `countersign schema explain`.
    struct Explain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the events and revenue range a value or a postback maps to.",
            discussion: """
            Examples:
              countersign schema explain examples/schemas/game.json --value 37 --window 0
              countersign schema explain examples/schemas/game.json --coarse high --window 1 --type re-engagement
              countersign schema explain examples/schemas/game.json --postback postback.json
            """
        )

        @Argument(help: "The schema JSON file.") var file: String
        @Option(help: "A fine conversion value, 0-63.") var value: Int?
        @Option(help: "A coarse conversion value: low, medium or high.") var coarse: String?
        @Option(help: "The window: 0, 1 or 2.") var window: Int?
        @Option(help: "install or re-engagement (default install).") var type = "install"
        @Option(help: "Decode with the version in force at this time (ISO 8601; default now).") var at: String?
        @Option(help: "A postback JSON file to decode instead of --value/--coarse.") var postback: String?
        @Option(help: "A source identifier to name with the schema's hierarchy.") var sourceIdentifier: String?
        @OptionGroup var keys: KeyOptions

        func validate() throws {
            if postback == nil {
                guard (value == nil) != (coarse == nil) else { throw ValidationError("give exactly one of --value, --coarse or --postback") }
                guard let window, (0...2).contains(window) else { throw ValidationError("--window must be 0, 1 or 2") }
                if let value, !(0...63).contains(value) { throw ValidationError("--value must be 0 to 63") }
                if let coarse, CoarseValue.Level(rawValue: coarse) == nil { throw ValidationError("--coarse must be low, medium or high") }
                guard ConversionClass(rawValue: type) != nil else { throw ValidationError("--type must be install or re-engagement") }
            }
            if let at, Timestamp.parse(at) == nil { throw ValidationError("--at must be an ISO 8601 time such as 2026-11-01T00:00:00Z") }
        }

        func run() async throws {
            let schema = try SchemaCommand.load(file)
            let time = at.flatMap { Timestamp.parse($0) } ?? Date()
            let result: Result<DecodedConversion, DecodeFailure>
            if let postback {
                let verification = PostbackVerifier(keyRing: try keys.loadKeyRing()).verify(try readInput(postback))
                guard let decoded = verification.postback else {
                    throw CLIFailure.rejected("\(postback): \(verification.problem?.message ?? "not a postback")")
                }
                result = SchemaDecoder.decode(schema, postback: decoded, receivedAt: time)
            } else {
                result = SchemaDecoder.decode(schema, conversionClass: ConversionClass(rawValue: type)!, window: window!, fine: value,
                                              coarse: coarse.flatMap(CoarseValue.Level.init(rawValue:)), sourceIdentifier: sourceIdentifier, at: time)
            }
            switch result {
            case .success(let decoded): print(JSONValue.object(Explanation.document(decoded)).prettyPrinted)
            case .failure(let failure): throw CLIFailure.rejected("cannot decode: \(failure.rawValue)")
            }
        }
    }

    /// `countersign schema import-csv CSV`.
    struct ImportCSV: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-csv",
            abstract: "Turn an MMP mapping export (value or coarse, window, event, min revenue, max revenue) into a schema.",
            discussion: "Prints the schema JSON; check it, add the source-identifier hierarchy if you have one, then upload it."
        )

        @Argument(help: "The CSV file, or - for standard input.") var csv: String
        @Option(help: "The app's App Store id.") var app: AppID
        @Option(help: "The revenue currency (ISO 4217).") var currency = "USD"
        @Option(name: .customLong("effective-from"), help: "When the schema takes effect (ISO 8601; default now).") var effectiveFrom: String?

        func run() async throws {
            let text = String(decoding: try readInput(csv), as: UTF8.self)
            let document: JSONValue
            do {
                document = try CSVImport.schemaDocument(csv: text, app: app, currency: currency, effectiveFrom: effectiveFrom ?? Timestamp.format(Date()))
            } catch {
                throw CLIFailure.rejected("\(csv): \(error)")
            }
            let check = SchemaReader.check(Array(document.serialized.utf8))
            for diagnostic in check.diagnostics { FileHandle.standardError.write(Data("\(diagnostic)\n".utf8)) }
            print(document.prettyPrinted)
            if !check.errors.isEmpty { throw CLIFailure.rejected("the imported schema has errors") }
        }
    }
}
