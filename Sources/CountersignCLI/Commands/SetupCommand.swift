import AppSetup
import ArgumentParser
import CountersignServer
import Foundation
import Postback

/// `countersign setup`: checks of an app's own set-up.
struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Check an app's Info.plist or Expo config for the attribution keys.",
        subcommands: [Check.self]
    )

    /// `countersign setup check FILE`.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check an Info.plist (XML or binary) or an Expo app.json for SKAdNetwork and AdAttributionKit mistakes.",
            discussion: """
            Prints one line per finding, FILE: error|warning: KEY-PATH: message. With --app, the copy endpoints are compared with the
            app's registered --copy-domain and its accepted ad networks must be listed (from the database); or give --copy-domain and
            --ad-network yourself, as an app's CI would. For app.config.js or .ts, run npx expo config --type introspect --json > app.config.json
            and check that. Exit 0 without errors (warnings printed), 1 with errors, 2 when the file cannot be read.
            Examples:
              countersign setup check ios/Game/Info.plist --copy-domain example.com
              countersign setup check app.json --app 1108187390
            """
        )

        @Argument(help: "Info.plist, app.json or app.config.json.") var file: String
        @Option(help: "Compare with this app's registered copy domain and accepted ad networks (countersign apps set).") var app: AppID?
        @Option(name: .customLong("copy-domain"), help: "The domain the app's developer copies should go to, such as example.com.") var copyDomain: String?
        @Option(name: .customLong("ad-network"), help: "An ad network id the app must list (repeatable).") var adNetworks: [String] = []
        @OptionGroup var database: DatabaseOption

        func validate() throws {
            if [".js", ".ts", ".mjs", ".cjs"].contains(where: { file.hasSuffix($0) }) {
                throw ValidationError("\(file) is code; run npx expo config --type introspect --json > app.config.json and check that file")
            }
        }

        func run() async throws {
            let contents: SetupFile.Contents
            let bytes = try readInput(file)
            guard bytes.count <= SetupFile.maximumBytes else { throw CLIFailure.usage("\(file) is larger than \(SetupFile.maximumBytes >> 20) MB: not an Info.plist") }
            switch SetupFile.read(bytes) {
            case .failure(let unreadable): throw CLIFailure.usage("\(file) \(unreadable.message)")
            case .success(let read): contents = read
            }
            var expectations = InfoPlistCheck.Expectations(copyDomain: copyDomain?.lowercased(), adNetworks: adNetworks)
            if let app {
                let store = try database.open()
                defer { store.close() }
                guard let entry = try await store.apps.list().first(where: { $0.app == app }) else {
                    throw CLIFailure.usage("app \(app) is not registered; register it with countersign apps set \(app), or give --copy-domain")
                }
                expectations.copyDomain = expectations.copyDomain ?? entry.copyDomain
                expectations.adNetworks += entry.adNetworks
            }
            let findings = contents.findings + (contents.root.map { InfoPlistCheck.check($0, prefix: contents.prefix, expecting: expectations) } ?? [])
            for finding in findings { print("\(file): \(finding)") }
            let errors = findings.count { $0.severity == .error }
            if errors > 0 { throw CLIFailure.rejected("\(file): \(errors) error(s); fix them, or the app's postbacks or copies will not arrive") }
            print("\(file): ok (\(findings.count) warning(s))")
        }
    }
}
