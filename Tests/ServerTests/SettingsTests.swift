import Foundation
import Testing
import TestSupport
import Store
@testable import CountersignCLI
@testable import CountersignServer

/// `serve` settings: flag over environment over config file over default.
@Suite struct SettingsTests {
    static func configFile(_ text: String) throws -> String {
        let path = Checkout.temporaryDirectory() + "/config.json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func flagBeatsEnvironmentBeatsConfigFileBeatsDefault() async throws {
        let config = try Self.configFile(#"{"port": 7000, "host": "0.0.0.0", "durability": "full", "adservices-backoff": 7, "adservices-url": "http://file.example/api/v1/", "keys": ["a=a.pem"]}"#)
        let command = try ServeCommand.parse(["--config", config, "--port", "9000", "--adservices-timeout", "2.5"])
        let settings = try await command.resolveSettings(environment: ["COUNTERSIGN_PORT": "8000", "COUNTERSIGN_HOST": "10.0.0.1",
                                                                 "COUNTERSIGN_ADSERVICES_URL": "http://env.example/api/v1/"])
        #expect(settings.port == 9000)
        #expect(settings.host == "10.0.0.1")
        #expect(settings.durability == .full)
        #expect(settings.extraKeys == ["a=a.pem"])
        #expect(settings.adServicesURL == "http://env.example/api/v1/")
        #expect(settings.adServicesPolicy.requestTimeout == 2.5)
        #expect(settings.adServicesPolicy.initialBackoff == 7)
        #expect(settings.adServicesPolicy.notFoundInterval == 5, "unset settings keep Apple's default")
        #expect(settings.database == "data/countersign.sqlite")
    }

    @Test(arguments: [
        (["--port", "70000"], [String: String](), "--port: invalid port 70000; expected an integer from 0 to 65535"),
        ([], ["COUNTERSIGN_ADSERVICES_URL": "ftp://x"], "COUNTERSIGN_ADSERVICES_URL: invalid adservices-url \"ftp://x\"; expected an http:// or https:// URL"),
        ([], ["COUNTERSIGN_ADSERVICES_BACKOFF": "-1"], "COUNTERSIGN_ADSERVICES_BACKOFF: invalid adservices-backoff -1.0"),
        ([], ["COUNTERSIGN_DURABILITY": "sometimes"], "COUNTERSIGN_DURABILITY: invalid durability; expected normal, full"),
        ([], ["COUNTERSIGN_PORT": "eighty"], "COUNTERSIGN_PORT: invalid port; expected an integer from 0 to 65535"),
        ([], ["COUNTERSIGN_ALLOW_DEVELOPMENT": "maybe"], "COUNTERSIGN_ALLOW_DEVELOPMENT: invalid allow-development; expected true or false"),
        (["--database", "postgres://"], [String: String](), "--database: invalid database ("),
    ])
    func invalidValuesNameTheSettingAndItsSource(flags: [String], environment: [String: String], expected: String) async throws {
        let command = try ServeCommand.parse(flags)
        await #expect { try await command.resolveSettings(environment: environment) } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func aConfigFileValueOfTheWrongTypeNamesTheFileAndKey() async throws {
        let config = try Self.configFile(#"{"port": "eighty"}"#)
        let command = try ServeCommand.parse(["--config", config])
        await #expect { try await command.resolveSettings(environment: [:]) } throws: { error in
            "\(error)".contains("\(config) \"port\": invalid port; expected an integer")
        }
    }

    @Test func theEnvironmentCanNameTheConfigFileAndListsAreCommaSeparated() async throws {
        let config = try Self.configFile(#"{"accept-ad-network": ["file.skadnetwork"], "database-pool": 3}"#)
        let command = try ServeCommand.parse([])
        let settings = try await command.resolveSettings(environment: ["COUNTERSIGN_CONFIG": config,
                                                                       "COUNTERSIGN_KEYS": "a=a.pem, b=b.pem"])
        #expect(settings.extraKeys == ["a=a.pem", "b=b.pem"])
        #expect(settings.acceptedAdNetworks == ["file.skadnetwork"])
        #expect(settings.databasePool == 3)
    }

    @Test func unknownConfigKeysAreRefused() async throws {
        let config = try Self.configFile(#"{"adservices-retries": 4}"#)
        let command = try ServeCommand.parse(["--config", config])
        await #expect { try await command.resolveSettings(environment: [:]) } throws: { error in
            "\(error)".contains("unknown setting \"adservices-retries\"")
        }
    }

    @Test func theServeHelpListsEverySettingWithTheDefaultServerSettingsHolds() {
        let help = ServeCommand.helpMessage(columns: 1000)
        let defaults = ServerSettings()
        for setting in ServerSettings.declarations {
            #expect(help.contains("--\(setting.flag)"), "serve --help lists --\(setting.flag)")
        }
        #expect(help.contains("--port <N>  (default \(defaults.port))\n        Port to listen on; 0 picks a free port (printed on start)."))
        #expect(help.contains("(default \(defaults.adServicesMaximumQueue))"))
        #expect(help.contains("(default \(Int(defaults.adServicesPolicy.tokenLifetime)))"))
    }

    @Test(arguments: [
        (["--prot", "9000"], "unknown option --prot; `countersign serve --help` lists the settings"),
        (["9000"], "unexpected argument \"9000\"; settings are given as --NAME VALUE"),
        (["--port"], "--port needs a value (N)"),
        (["--host", "--port", "1"], "--host needs a value (ADDRESS)"),
        (["--allow-development", "yes"], "unexpected argument \"yes\"; settings are given as --NAME VALUE"),
    ])
    func misspeltOrIncompleteFlagsAreRefused(flags: [String], expected: String) async throws {
        let command = try ServeCommand.parse(flags)
        await #expect { try await command.resolveSettings(environment: [:]) } throws: { error in
            "\(error)" == expected
        }
    }

    /// A value is taken as typed: a comma in a path stays in it (a list is made of repeated flags, not commas), and the
    /// last of a repeated single-value flag wins.
    @Test func flagValuesAreTakenAsTyped() async throws {
        let command = try ServeCommand.parse(["--database", "/tmp/a,b/db.sqlite", "--key", "kid=/k/a,b.pem", "--port", "1", "--port", "2"])
        let settings = try await command.resolveSettings(environment: [:])
        #expect(settings.database == "/tmp/a,b/db.sqlite")
        #expect(settings.extraKeys == ["kid=/k/a,b.pem"])
        #expect(settings.port == 2)
        await #expect { try await ServeCommand.parse(["--port", "eighty"]).resolveSettings(environment: [:]) } throws: { error in
            "\(error)" == "--port: invalid port \"eighty\"; expected a whole number"
        }
    }

    @Test func everyFlagFormIsRead() async throws {
        let command = try ServeCommand.parse(["--port=9001", "--allow-development", "--key", "a=a.pem", "--key=b=b.pem", "--accept-ad-network", "x.skadnetwork",
                                              "--source-prefix-v6", "48", "--forward-max-backoff", "120"])
        let settings = try await command.resolveSettings(environment: [:])
        #expect(settings.port == 9001)
        #expect(settings.allowDevelopment)
        #expect(settings.extraKeys == ["a=a.pem", "b=b.pem"])
        #expect(settings.acceptedAdNetworks == ["x.skadnetwork"])
        #expect(settings.sources.v6Prefix == 48)
        #expect(settings.forwardSchedule.maximumBackoff == 120)
    }

    /// docs/operations.md's table of settings has one row per declared setting, with its flag, environment variable,
    /// config-file key and the default the server uses, and no row for a setting that does not exist.
    @Test func theOperationsTableMatchesTheDeclarations() throws {
        let text = try String(contentsOf: Checkout.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## Settings\n").last?.components(separatedBy: "\n## ").first)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| `--") }.map { line in
            line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let defaults = ServerSettings()
        var documented: Set<String> = []
        for row in rows {
            let flag = String(row[0].dropFirst(3).prefix { $0 != " " && $0 != "`" })
            guard let setting = ServerSettings.declarations.first(where: { $0.flag == flag }) else {
                Issue.record("docs/operations.md documents --\(flag), which serve does not take")
                continue
            }
            documented.insert(setting.name)
            #expect(row[1].hasPrefix("`\(setting.environmentVariable)"), "--\(flag): environment \(row[1])")
            #expect(row[2] == "`\(setting.name)`", "--\(flag): config key \(row[2])")
            let expectedDefault = setting.defaultText(defaults).map { "`\($0)`" } ?? "none"
            #expect(row[3] == expectedDefault || (setting.value == nil && row[3] == "off") || (setting.repeatable && row[3] == "any"),
                    "--\(flag): default \(row[3]), the server's \(expectedDefault)")
        }
        #expect(documented == Set(ServerSettings.declarations.map(\.name)), "settings missing from docs/operations.md: \(Set(ServerSettings.declarations.map(\.name)).subtracting(documented).sorted())")
    }
}
