import ArgumentParser
import CountersignServer
import Foundation
import JWS
import Postback
import Store

/// `countersign advertiser`: the advertisers a network serves, each a name and its apps (docs/operations.md#advertisers).
struct AdvertiserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertiser",
        abstract: "Add, change, list and remove advertisers: each a name and the apps it owns.",
        discussion: """
        A key made with apikey create --advertiser NAME sees the advertiser's apps only, on every route; its forwarding
        rules are the rules limited to one of its apps (forward set --app).
        Example: countersign advertiser set acme-games --app 1108187390 --app 525463029
        """,
        subcommands: [Set.self, List.self, Show.self, Remove.self]
    )

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add an advertiser, or replace its apps with those given.")
        @Argument(help: "The advertiser's name: 1 to 64 of a-z, 0-9, '.', '_' and '-'.") var name: String
        @Option(help: "An app it owns (repeatable); an app belongs to one advertiser at most.") var app: [AppID] = []
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open(create: true)
            defer { store.close() }
            do {
                print(JSONValue.object(try await store.advertisers.set(name: name, apps: Swift.Set(app)).json).prettyPrinted)
            } catch let refusal as AdvertiserRegistry.Refusal {
                if case .badName = refusal { throw CLIFailure.usage(refusal.description) }
                throw CLIFailure.rejected(refusal.description)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the advertisers with their apps, keys and forwarding rules.")
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            print(JSONValue.object(JSONObject([JSONMember(key: "advertisers", value: .array(try await store.advertisers.all().map { .object($0.json) }))])).prettyPrinted)
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one advertiser: its apps, keys (never the keys themselves) and forwarding rules.")
        @Argument(help: "The advertiser's name.") var name: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard let entry = try await store.advertisers.named(name) else {
                throw CLIFailure.rejected("no advertiser is named \(name); countersign advertiser list lists them")
            }
            print(JSONValue.object(entry.json).prettyPrinted)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an advertiser and revoke its keys; its apps' postbacks, names and rules stay.")
        @Argument(help: "The advertiser's name.") var name: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard try await store.advertisers.remove(name) else {
                throw CLIFailure.rejected("no advertiser is named \(name); countersign advertiser list lists them")
            }
            print("removed \(name) and revoked its keys")
        }
    }
}

/// `countersign pull`: the raw pull `GET /v1/postbacks` streams, written to standard output a page at a time.
struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Write the postbacks the filters select with Apple's fields unchanged, plus the network's ids and names.",
        discussion: """
        Bodies are made by a delivery template (pull by default; forward templates lists them). NDJSON keeps every member
        of Apple's body; CSV has a column for each of Apple's documented fields, then the template's keys. Without
        --include-uncounted only counted postbacks.
        Example: countersign pull --app 1108187390 --last 7d > acme.ndjson
        """
    )

    @OptionGroup var database: DatabaseOption
    @OptionGroup var filters: ReportFilterOptions
    @Option(help: "ndjson (default) or csv.") var format = "ndjson"
    @Option(help: "The delivery template that makes each body (default pull).") var template = PostbackPull.defaultTemplate

    func run() async throws {
        guard let format = PullWriter.Format(rawValue: format) else { throw CLIFailure.usage("--format must be ndjson or csv") }
        let store = try database.open()
        defer { store.close() }
        guard let template = try await store.deliveryTemplates.named(template) else {
            throw CLIFailure.rejected("no delivery template is named \(template); countersign forward templates lists them")
        }
        let query = try await filters.query(store)
        try await PullWriter.write(store.pull, query, template: template, format: format) { bytes in FileHandle.standardOutput.write(Data(bytes)) }
    }
}
