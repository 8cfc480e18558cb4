import CountersignServer
import ArgumentParser
import Configuration
import Foundation
import JWS
import Postback
import Store

/// `--database` as `serve` takes it.
struct DatabaseOption: ParsableArguments {
    @Option(help: "SQLite file or postgres:// URL (default $COUNTERSIGN_DATABASE or data/countersign.sqlite, as serve).")
    var database: String?

    /// Opens the store; an SQLite file must exist unless `create` is set.
    func open(create: Bool = false) throws -> StoreDatabase {
        let settings = try ServerSettings.reading(["database"], arguments: database.map { ["--database", $0] } ?? [],
                                                  environment: ProcessInfo.processInfo.environment)
        return try StoreOpening.open(settings.database, create: create)
    }
}

/// Opening the store from a `--database` value, with the CLI's one-line errors.
enum StoreOpening {
    /// Opens `text` (a file path or a `postgres://` URL); an SQLite file must exist unless `create` is set.
    static func open(_ text: String, create: Bool = false) throws(CLIFailure) -> StoreDatabase {
        let location: DatabaseLocation
        do { location = try DatabaseLocation(text) } catch { throw CLIFailure.usage("--database \(error.message)") }
        if case .sqlite(let path) = location, !create, !FileManager.default.fileExists(atPath: path) {
            throw CLIFailure.usage("no database at \(path); start countersign serve once to create it, or pass --database")
        }
        do {
            let store = try StoreDatabase(settings: StoreSettings(location: location))
            StoreRunner.run(store)
            return store
        } catch {
            throw CLIFailure.usage("cannot open \(location): \(reason(error)); check the path and its permissions, or pass another --database")
        }
    }

    /// Why the store could not be opened, in a few words: a directory that cannot be made names its path and the
    /// system's reason, rather than Foundation's error dump.
    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        guard nsError.domain == NSCocoaErrorDomain, let path = nsError.userInfo[NSFilePathErrorKey] as? String else { return "\(error)" }
        let underlying = (nsError.userInfo[NSUnderlyingErrorKey] as? NSError).map { String(cString: strerror(Int32($0.code))) }
        return "cannot create \(path)" + (underlying.map { " (\($0))" } ?? "")
    }
}

/// `countersign apikey`: keys for the private HTTP API.
struct APIKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apikey",
        abstract: "Create, list and revoke API keys for the /v1 HTTP API (stored hashed; a key is shown once).",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a key and print it once.",
            discussion: """
            Scopes: read (reports, conversions, intake, postbacks, Apple Ads records and jobs, schemas and names), schemas
            (upload schemas, set names), admin (everything), metrics (/metrics when serve has --metrics-require-key).
            Examples:
              countersign apikey create --name dashboard --scope read --app 1108187390
              countersign apikey create --name acme-reports --scope read --advertiser acme-games
            """
        )
        @Option(help: "Who or what the key is for.") var name: String
        @Option(help: "Comma-separated scopes: read, schemas, admin, metrics, encoder (default read,schemas).") var scope: String?
        @Option(help: "Limit the key to this app (repeatable; default every app).") var app: [AppID] = []
        @Option(help: "Make the key for this advertiser: it sees the advertiser's apps only, as they are when it is used.") var advertiser: String?
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            var scopes = APIScope.defaults
            if let scope {
                scopes = []
                for name in scope.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                    guard let scope = APIScope(rawValue: name) else {
                        throw CLIFailure.usage("--scope: unknown scope \"\(name)\"; use \(APIScope.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    scopes.insert(scope)
                }
            }
            guard !scopes.isEmpty else { throw CLIFailure.usage("--scope: name at least one scope") }
            guard advertiser == nil || app.isEmpty else { throw CLIFailure.usage("--advertiser and --app: a key for an advertiser covers its apps; give one or the other") }
            let (record, key): (APIKeyRecord, String)
            do {
                (record, key) = try await database.open(create: true).apiKeys.create(name: name, scopes: scopes, apps: app.isEmpty ? nil : Set(app),
                                                                                   advertiser: advertiser)
            } catch let refusal as APIKeyStore.Refusal {
                if case .scopeSpansEveryApp = refusal { throw CLIFailure.usage("--scope: \(refusal.description)") }
                throw CLIFailure.rejected(refusal.description)
            }
            print(JSONValue.object(JSONObject([
                JSONMember(key: "id", value: .number(String(record.id))),
                JSONMember(key: "name", value: .string(record.name)),
                JSONMember(key: "key", value: .string(key)),
            ] + Self.grantMembers(record.grant))).prettyPrinted)
            FileHandle.standardError.write(Data("store the key now: it cannot be shown again\n".utf8))
        }

        /// `scopes`, `apps` (null: every app) and `advertiser` (null: none) as JSON members.
        static func grantMembers(_ grant: APIKeyGrant) -> [JSONMember] {
            [JSONMember(key: "scopes", value: .array(grant.scopes.sorted().map { .string($0.rawValue) })),
             JSONMember(key: "apps", value: grant.apps.map { .array($0.sorted().map { .number(String($0)) }) } ?? .null),
             JSONMember(key: "advertiser", value: grant.advertiser.map { .string($0) } ?? .null)]
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List keys (never the keys themselves).")
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let keys = try await database.open().apiKeys.list()
            print(output.render(ReportTable(objects: keys.map { record in
                JSONObject([
                    JSONMember(key: "id", value: .number(String(record.id))),
                    JSONMember(key: "name", value: .string(record.name)),
                    JSONMember(key: "prefix", value: .string(record.prefix)),
                    JSONMember(key: "created_at", value: .string(record.createdAt)),
                    JSONMember(key: "revoked_at", value: record.revokedAt.map { .string($0) } ?? .null),
                ] + Create.grantMembers(record.grant))
            })), terminator: "")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key by id; it stops working at once.")
        @Argument(help: "The key's id (from apikey list).") var id: Int64
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            guard try await database.open().apiKeys.revoke(id: id) else { throw CLIFailure.rejected("no active key with id \(id)") }
            print("revoked \(id)")
        }
    }
}

/// `countersign redecode`: apply a corrected schema to history.
struct RedecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redecode",
        abstract: "Re-apply an app's current schema to its stored postbacks, showing progress.",
        discussion: "Example: countersign redecode --app 1108187390 --from 2026-11-01"
    )

    @Option(help: "The app's App Store id.") var app: AppID
    @Option(help: "Only postbacks received at or after this time (ISO 8601).") var from: String?
    @OptionGroup var database: DatabaseOption

    func validate() throws {
        if let from, Timestamp.parse(from) == nil { throw ValidationError("--from must be an ISO 8601 time such as 2026-11-01") }
    }

    func run() async throws {
        let store = try database.open()
        guard try await store.schemas.hasCurrentSchema(app: app) else { throw CLIFailure.rejected("no schema stored for app \(app); upload one with PUT /v1/schemas/\(app)") }
        let terminal = isatty(STDERR_FILENO) == 1
        let total = try await store.ledger.redecode(app: app, from: from.flatMap { Timestamp.parse($0) }) { done, total in
            let line = "redecoded \(done)/\(total)"
            FileHandle.standardError.write(Data((terminal ? "\r" + line : line + "\n").utf8))
        }
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
        print(JSONValue.object(JSONObject([
            JSONMember(key: "app", value: .string(app.description)),
            JSONMember(key: "redecoded", value: .number(String(total))),
        ])).prettyPrinted)
    }
}
