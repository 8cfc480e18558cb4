import CountersignServer
import ArgumentParser
import Foundation
import Postback
import JWS
import Store

/// `countersign apps`: the registry of apps this installation serves, with each app's policy.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "Register the apps this installation serves, each with its accepted ad networks, development setting, currency and time zone.",
        discussion: """
        With no app registered every app is served. Once one is, postbacks of other apps are stored but never counted
        (reason app_not_registered). Running servers apply a change within 5 seconds.
        Example: countersign apps set 1108187390 --name Game --ad-network example123.skadnetwork --currency USD --time-zone Europe/Berlin
        """,
        subcommands: [SetApp.self, List.self, Remove.self, Status.self]
    )

    struct SetApp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Register an app, or replace its settings.")
        @Argument(help: "The app's App Store id.") var app: AppID
        @Option(help: "What people call the app.") var name: String
        @Option(name: .customLong("ad-network"), help: "Accept only this ad network for the app (repeatable; default: those the server accepts).") var adNetworks: [String] = []
        @Flag(name: .customLong("allow-development"), help: "Accept the app's development postbacks (never counted) whatever the server's setting.") var allowDevelopment = false
        @Option(help: "The app's revenue currency (ISO 4217); a schema in another currency is refused.") var currency: String?
        @Option(name: .customLong("time-zone"), help: "The IANA time zone of the app's report days when a report names the app and no zone.") var timeZone: String?
        @Option(name: .customLong("copy-domain"), help: "The domain the app's Info.plist names for developer copies, such as example.com (docs/setup.md).") var copyDomain: String?
        @Flag(name: .customLong("public-schema"), help: "Let anyone read the app's published schema, GET /v1/schemas/APP/published, without a key (docs/app-integration.md).")
        var publicSchema = false
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open(create: true)
            defer { store.close() }
            let entry = AppRegistry.Entry(app: app, name: name, adNetworks: adNetworks, allowDevelopment: allowDevelopment,
                                          currency: currency?.uppercased(), timeZone: timeZone, copyDomain: copyDomain, publicSchema: publicSchema)
            do { try await store.apps.set(entry) } catch let problem as AppRegistry.Problem {
                throw CLIFailure.usage("--\(problem.field.replacingOccurrences(of: "_", with: "-")): \(problem.message)")
            }
            let stored = try await store.apps.list().first { $0.app == app }
            print(JSONValue.object(stored?.json ?? entry.json).prettyPrinted)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered apps.")
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            let apps = try await store.apps.list()
            if apps.isEmpty, output == .table { FileHandle.standardError.write(Data("no app registered: every app is served\n".utf8)) }
            print(output.render(ReportTable(objects: apps.map(\.json))), terminator: "")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an app from the registry (its postbacks stay).")
        @Argument(help: "The app's App Store id.") var app: AppID
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard try await store.apps.remove(app: app) else { throw CLIFailure.rejected("app \(app) is not in the registry") }
            print("removed \(app)")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Whether each app is set up right: what arrives by protocol, version, ad network and channel, how it fares, and whether developer copies arrive.",
            discussion: """
            Columns (docs/setup.md):
            \(SetupStatus.columns.map { "  \($0.name): \($0.definition)" }.joined(separator: "\n"))

            Channels:
            \(ArrivalChannel.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

            Per app (apps in JSON; one line per app in the table):
            \(SetupStatus.summaryFields.map { "  \($0.name): \($0.definition)" }.joined(separator: "\n"))

            Developer copies, one line per app:
            \(SetupStatus.DeveloperCopies.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

            What the stored postbacks say about the app's encoder (encoder in JSON; one line per symptom in the table):
            \(EncoderHealth.Kind.allCases.map { "  \($0.rawValue): \($0.cause)" }.joined(separator: "\n"))

            Example: countersign apps status --app 1108187390 --days 7
            """
        )
        @Option(help: "Only this app.") var app: AppID?
        @Option(help: "The days looked at, today included (1 to 400).") var days = 30
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            guard (1...400).contains(days) else { throw CLIFailure.usage("--days must be 1 to 400") }
            let store = try database.open()
            defer { store.close() }
            let since = Date().addingTimeInterval(-Double(days - 1) * 86_400)
            let (table, apps) = try await store.setupStatus.report(app: app, since: since)
            let encoder = try await store.setupStatus.encoder(app: app, since: since)
            let extra = [JSONMember(key: "apps", value: .array(apps.map(\.json))), JSONMember(key: "encoder", value: encoder.symptomsJSON),
                         JSONMember(key: "encoder_days", value: encoder.daysJSON)]
            switch output {
            case .table:
                print(output.render(table, extra: extra), terminator: "")
                print("")
                for app in apps { print(app.line) }
                for line in encoder.lines { print(line) }
            default:
                print(output.render(table, extra: extra), terminator: "")
            }
        }
    }
}
