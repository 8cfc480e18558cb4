import CountersignServer
import Spend
import ArgumentParser
import Foundation
import Postback
import JWS
import Store

/// `countersign names`: the ad-network registry and campaign, ad-group and creative names per app and ad network.
struct NamesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "names",
        abstract: "Name ad networks, and campaigns, ad groups and creatives per app and ad network, for reports.",
        discussion: """
        Each ad network chooses its own source-identifier digits, so a campaign name belongs to an app and an ad network.
        Reports use these names first, then the app's schema names, then the digits.
        Example: countersign names set-network su67r6k2v3.skadnetwork "Northwind Ads"
                 countersign names set --app 1108187390 --ad-network su67r6k2v3.skadnetwork --level campaign --digits 12 "Spring sale"
        """,
        subcommands: [Networks.self, SetNetwork.self, ImportNetworks.self, RemoveNetwork.self, List.self, Set.self, Remove.self, Mappings.self, ImportMappings.self]
    )

    /// Runs `body`, turning a refused name into a usage error that says what to type.
    static func checked(_ body: () async throws -> Void) async throws {
        do { try await body() } catch let problem as NameRegistry.Problem {
            throw CLIFailure.usage("--\(problem.field.replacingOccurrences(of: "_", with: "-")): \(problem.message)")
        }
    }

    static func level(_ text: String) throws(CLIFailure) -> NameRegistry.Level {
        guard let level = NameRegistry.Level(rawValue: text) else {
            throw CLIFailure.usage("--level must be \(NameRegistry.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }

    struct Networks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List ad network names (given and built in).")
        @OptionGroup var database: DatabaseOption
        @OptionGroup var output: OutputOption

        func run() async throws {
            let output = try self.output.chosen()
            let named = try await database.open().names.adNetworks()
            var rows = named.map { [JSONValue.string($0.adNetworkID), .string($0.name), .string("given")] }
            for (id, name) in NameRegistry.builtInAdNetworks.sorted(by: { $0.key < $1.key }) where !named.contains(where: { $0.adNetworkID == id }) {
                rows.append([.string(id), .string(name), .string("built in")])
            }
            print(output.render(ReportTable(columns: ["ad_network_id", "name", "source"], rows: rows)), terminator: "")
        }
    }

    struct SetNetwork: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set-network", abstract: "Name an ad network.")
        @OptionGroup var database: DatabaseOption
        @Argument(help: "The ad network id, such as su67r6k2v3.skadnetwork.") var adNetwork: String
        @Argument(help: "The name reports show.") var name: String

        func run() async throws {
            let store = try database.open()
            try await NamesCommand.checked { try await store.names.setAdNetwork(adNetwork, name: name) }
        }
    }

    struct ImportNetworks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-networks",
            abstract: "Name ad networks from a list networks publish: skadnetwork_id and entity_name per entry, in JSON.",
            discussion: """
            The layout ad networks and SDK vendors publish for Info.plist's SKAdNetworkItems: {"skadnetwork_ids": [{"skadnetwork_id":
            "...", "entity_name": "..."}]}, or an array of such objects. Names given with set-network are kept unless --replace.
            Countersign ships no list; use one whose terms suit you (docs/cli.md#names).
            Example: countersign names import-networks skadnetworks.json
            """
        )
        @OptionGroup var database: DatabaseOption
        @Argument(help: "The JSON file, or - for standard input.") var file: String
        @Flag(help: "Rename networks that already have another name.") var replace = false

        func run() async throws {
            // At most one byte over the limit is read, so a huge input is refused without being held.
            guard let handle = file == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: file),
                  let data = try? handle.read(upToCount: AdNetworkList.maximumBytes + 1) ?? Data() else {
                throw CLIFailure.usage("cannot read \(file); give a JSON file or -")
            }
            let bytes = Array(data)
            let list: AdNetworkList
            do { list = try AdNetworkList.parse(bytes) } catch { throw CLIFailure.rejected("\(file): \(error.description)") }
            let store = try database.open()
            defer { store.close() }
            let done = try await store.names.importAdNetworks(list.entries, replace: replace)
            var answer = JSONObject()
            answer.set("added", .number(String(done.added)))
            answer.set("renamed", .number(String(done.renamed)))
            answer.set("kept", .number(String(done.kept)))
            answer.set("unchanged", .number(String(done.unchanged)))
            answer.set("skipped", .array(list.skipped.map { skipped in
                var entry = JSONObject()
                entry.set("entry", .number(String(skipped.entry)))
                entry.set("reason", .string(skipped.reason))
                return .object(entry)
            }))
            print(JSONValue.object(answer).prettyPrinted)
            if done.kept > 0 { FileHandle.standardError.write(Data("countersign: \(done.kept) networks kept the names they had; --replace renames them\n".utf8)) }
        }
    }

    struct RemoveNetwork: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove-network", abstract: "Remove an ad network's name.")
        @OptionGroup var database: DatabaseOption
        @Argument(help: "The ad network id.") var adNetwork: String

        func run() async throws {
            guard try await database.open().names.removeAdNetwork(adNetwork) else {
                throw CLIFailure.rejected("\(adNetwork) has no name in the registry; see countersign names networks")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List an app's campaign, ad-group and creative names by ad network.")
        @OptionGroup var database: DatabaseOption
        @Option(help: "The app's numeric App Store id.") var app: AppID
        @OptionGroup var output: OutputOption

        func run() async throws {
            let output = try self.output.chosen()
            let names = try await database.open().names.sourceNames(app: app)
            let rows = names.map { [JSONValue.string($0.adNetworkID), .string($0.level.rawValue), .string($0.digits), .string($0.name)] }
            print(output.render(ReportTable(columns: ["ad_network_id", "level", "digits", "name"], rows: rows)), terminator: "")
        }
    }

    /// The app, ad network, level and digits a source name belongs to.
    struct SourceNameOptions: ParsableArguments {
        @Option(help: "The app's numeric App Store id.") var app: AppID
        @Option(name: .customLong("ad-network"), help: "The ad network id.") var adNetwork: String
        @Option(help: "campaign (2 digits), ad_group (1 digit) or creative (1 digit).") var level: String
        @Option(help: "The digits, such as 12.") var digits: String
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Name a campaign, ad group or creative of an app on one ad network.")
        @OptionGroup var database: DatabaseOption
        @OptionGroup var source: SourceNameOptions
        @Argument(help: "The name reports show.") var name: String

        func run() async throws {
            let level = try NamesCommand.level(source.level)
            let store = try database.open()
            try await NamesCommand.checked {
                try await store.names.setSourceName(app: source.app, adNetwork: source.adNetwork, level: level, digits: source.digits, name: name)
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a campaign, ad-group or creative name.")
        @OptionGroup var database: DatabaseOption
        @OptionGroup var source: SourceNameOptions

        func run() async throws {
            let level = try NamesCommand.level(source.level)
            guard try await database.open().names.removeSourceName(app: source.app, adNetwork: source.adNetwork, level: level, digits: source.digits) else {
                throw CLIFailure.rejected("no such name; see countersign names list --app \(source.app)")
            }
        }
    }

    struct Mappings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List an app's dated source-identifier mappings by ad network, identifier and first day.")
        @OptionGroup var database: DatabaseOption
        @Option(help: "The app's numeric App Store id.") var app: AppID
        @Option(name: .customLong("ad-network"), help: "Only this ad network.") var adNetwork: String?
        @OptionGroup var output: OutputOption

        func run() async throws {
            let output = try self.output.chosen()
            let listed = try await database.open().names.mappings(app: app, adNetwork: adNetwork)
            let columns = ["ad_network_id"] + (SourceMapping(sourceIdentifier: "", validFrom: "", campaignID: "").json.members.map(\.key))
            let rows = listed.map { entry in [JSONValue.string(entry.adNetwork)] + entry.mapping.json.members.map(\.value) }
            print(output.render(ReportTable(columns: columns, rows: rows)), terminator: "")
        }
    }

    struct ImportMappings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-mappings",
            abstract: "Replace an app and ad network's dated mappings with a CSV in the SKAN standard's layout.",
            discussion: """
            Columns: Start Date, End Date (optional, included), SKCampaignId (or Source Identifier), Country and Publisher ID
            (optional), Campaign ID, and optionally Campaign Name, Ad Group ID, Ad Group Name, Creative ID, Creative Name.
            Example: countersign names import-mappings mappings.csv --app 1108187390 --ad-network example123.skadnetwork
            """
        )
        @OptionGroup var database: DatabaseOption
        @Argument(help: "The CSV file, or - for standard input.") var file: String
        @Option(help: "The app's numeric App Store id.") var app: AppID
        @Option(name: .customLong("ad-network"), help: "The ad network id the identifiers are its.") var adNetwork: String

        func run() async throws {
            let bytes: [UInt8]
            if file == "-" { bytes = Array(FileHandle.standardInput.readDataToEndOfFile()) } else {
                guard let data = FileManager.default.contents(atPath: file) else { throw CLIFailure.usage("cannot read \(file); give a CSV file or -") }
                bytes = Array(data)
            }
            let store = try database.open()
            defer { store.close() }
            let count: Int
            do {
                count = try await store.names.setMappings(app: app, adNetwork: adNetwork, try SourceMapping.parse(bytes))
            } catch let problem as SourceMapping.Problem {
                throw CLIFailure.rejected("\(file): \(problem.description)")
            } catch let problem as NameRegistry.Problem {
                throw CLIFailure.usage(problem.description)
            }
            print("imported \(count) mappings for app \(app) on \(adNetwork); they replace the ones it had")
        }
    }
}
