import CountersignServer
import ArgumentParser
import ConversionSchema
import Foundation
import Postback
import JWS
import Store

extension SchemaCommand {
    /// `countersign schema upload FILE`: stores a schema as its app's next revision, as `PUT /v1/schemas/{app}` does.
    struct Upload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a schema as its app's next revision and decode the app's postbacks that waited for one.",
            discussion: """
            Exit 0 stored (warnings printed), 1 when the schema has errors (printed with their JSON paths), 2 when the file or
            database cannot be read.
            Example: countersign schema upload examples/schemas/game.json --app 1234567890   # an example, for your own app
            """
        )
        @Argument(help: "The schema JSON file, or - for standard input.") var file: String
        @Option(help: "Store it for this app instead of the one the file names (to start from an example in examples/schemas).") var app: AppID?
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            var document = try readInput(file)
            if let app { document = try Self.document(document, for: app) }
            guard let schema = SchemaReader.check(document).schema else {
                for diagnostic in SchemaReader.check(document).errors { FileHandle.standardError.write(Data("\(file): \(diagnostic)\n".utf8)) }
                throw CLIFailure.rejected("\(file) has errors; fix them (countersign schema check \(file)) and upload again")
            }
            let store = try database.open(create: true)
            defer { store.close() }
            switch try await store.schemas.put(app: schema.app, document: document) {
            case .invalid(let errors):
                for diagnostic in errors { FileHandle.standardError.write(Data("\(file): \(diagnostic)\n".utf8)) }
                throw CLIFailure.rejected("\(file) was not stored")
            case .stored(let revision, let warnings, let waiting):
                for warning in warnings { FileHandle.standardError.write(Data("\(file): \(warning)\n".utf8)) }
                if waiting > 0 {
                    FileHandle.standardError.write(Data(("\(waiting) postbacks stored before this schema wait to be decoded: a running countersign serve "
                        + "decodes them within seconds, or run countersign redecode --app \(schema.app)\n").utf8))
                }
                print(JSONValue.object(JSONObject([
                    JSONMember(key: "app", value: .string(schema.app.description)), JSONMember(key: "revision", value: .number(String(revision))),
                    JSONMember(key: "warnings", value: .number(String(warnings.count))), JSONMember(key: "waiting_postbacks", value: .number(String(waiting))),
                ])).prettyPrinted)
            }
        }

        /// `document` with its `app` member set to `app` (every other member as it was); refused (exit 1) when it is not a
        /// JSON object.
        static func document(_ document: [UInt8], for app: AppID) throws(CLIFailure) -> [UInt8] {
            guard var object = (try? JSONParser.parse(document))?.object else {
                throw CLIFailure.rejected("the file is not a JSON object, so --app has no app to replace; countersign schema check shows why")
            }
            object.set("app", .string(String(app)))
            return Array(JSONValue.object(object).prettyPrinted.utf8)
        }
    }

    /// `countersign schema list`: each app's current revision.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the apps with a schema and each one's current revision.")
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            let revisions = try await store.schemas.revisions()
            if revisions.isEmpty, output == .table { FileHandle.standardError.write(Data("no schema stored yet; add one with countersign schema upload FILE\n".utf8)) }
            print(output.render(Self.table(revisions)), terminator: "")
        }

        /// Revisions as rows: app, revision, uploaded_at, bytes.
        static func table(_ revisions: [SchemaRegistry.Revision]) -> ReportTable {
            ReportTable(columns: ["app", "revision", "uploaded_at", "bytes"], rows: revisions.map {
                [.number($0.app.description), .number(String($0.revision)), .string($0.uploadedAt), .number(String($0.bytes))]
            })
        }
    }

    /// `countersign schema history APP`: every revision of one app's schema.
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List every revision of an app's schema, oldest first.")
        @Argument(help: "The app's App Store id.") var app: AppID
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            let revisions = try await store.schemas.revisions(app: app)
            guard !revisions.isEmpty else { throw CLIFailure.rejected("app \(app) has no schema; add one with countersign schema upload FILE") }
            print(output.render(List.table(revisions)), terminator: "")
        }
    }

    /// `countersign schema diff APP`: what changed between two revisions, line by line.
    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what changed between two revisions of an app's schema (default: the previous and the current).",
            discussion: "Both are printed in the same JSON layout first, so only real changes show: - lines were removed, + lines added, each with its line number. Exit 0 when they are the same, 1 when they differ."
        )
        @Argument(help: "The app's App Store id.") var app: AppID
        @Option(help: "The older revision (default: the one before --to).") var from: Int?
        @Option(help: "The newer revision (default: the current one).") var to: Int?
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard let newer = try await store.schemas.document(app: app, revision: to) else {
                throw CLIFailure.usage(to.map { "app \(app) has no revision \($0); see countersign schema history \(app)" }
                    ?? "app \(app) has no schema; add one with countersign schema upload FILE")
            }
            let older = from ?? newer.revision - 1
            guard older >= 1, let base = try await store.schemas.document(app: app, revision: older) else {
                throw CLIFailure.usage("app \(app) has no revision \(older) to compare with; see countersign schema history \(app)")
            }
            let before = Self.lines(base.document), after = Self.lines(newer.document)
            print("--- app \(app) revision \(base.revision)\n+++ app \(app) revision \(newer.revision)")
            let difference = after.difference(from: before)
            for change in difference.removals { if case .remove(let offset, let line, _) = change { print("-\(offset + 1): \(line)") } }
            for change in difference.insertions { if case .insert(let offset, let line, _) = change { print("+\(offset + 1): \(line)") } }
            if !difference.isEmpty { throw CLIFailure.rejected("") }
        }

        /// The document's lines in one JSON layout, so reformatting alone shows no change.
        static func lines(_ document: String) -> [String] {
            let text = (try? JSONParser.parse(Array(document.utf8)))?.prettyPrinted ?? document
            return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }
    }
}
