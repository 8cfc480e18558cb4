import Foundation
import Testing
import Store
@testable import PostbackServer

/// `serve` settings: flag over environment over config file over default.
@Suite struct SettingsTests {
    static func configFile(_ text: String) throws -> String {
        let path = Checkout.temporaryDirectory() + "/config.json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func flagBeatsEnvironmentBeatsConfigFileBeatsDefault() throws {
        let config = try Self.configFile(#"{"port": 7000, "host": "0.0.0.0", "durability": "full", "adservices-backoff": 7, "adservices-url": "http://file.example/api/v1/", "keys": ["a=a.pem"]}"#)
        let command = try ServeCommand.parse(["--config", config, "--port", "9000", "--adservices-timeout", "2.5"])
        let settings = try command.resolveSettings(environment: ["COUNTERSIGN_PORT": "8000", "COUNTERSIGN_HOST": "10.0.0.1",
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
        (["--port", "70000"], [String: String](), "invalid port"),
        ([], ["COUNTERSIGN_ADSERVICES_URL": "ftp://x"], "invalid adservices-url"),
        ([], ["COUNTERSIGN_ADSERVICES_BACKOFF": "-1"], "invalid adservices-backoff"),
        ([], ["COUNTERSIGN_DURABILITY": "sometimes"], "invalid durability"),
    ])
    func invalidValuesNameTheSettingAndItsSource(flags: [String], environment: [String: String], expected: String) throws {
        let command = try ServeCommand.parse(flags)
        #expect { try command.resolveSettings(environment: environment) } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func unknownConfigKeysAreRefused() throws {
        let config = try Self.configFile(#"{"adservices-retries": 4}"#)
        let command = try ServeCommand.parse(["--config", config])
        #expect { try command.resolveSettings(environment: [:]) } throws: { error in "\(error)".contains("unknown setting \"adservices-retries\"") }
    }
}
