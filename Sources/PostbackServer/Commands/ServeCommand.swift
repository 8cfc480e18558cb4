import ArgumentParser
import Foundation
import Hummingbird
import JWS
import Logging
import Store

/// `countersign serve`: the HTTP receiver.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Receive postbacks over HTTP and store them in SQLite.",
        discussion: """
        Every option can also be set as COUNTERSIGN_<NAME> (for example COUNTERSIGN_PORT=9000) or in a JSON \
        --config file ({"port": 9000}); flags win over the environment, which wins over the file.

        Example: countersign serve --port 8080 --database data/countersign.sqlite --allow-development
        """
    )

    @Option(help: "JSON config file.") var config: String?
    @Option(help: "Address to bind (default 127.0.0.1).") var host: String?
    @Option(help: "Port to listen on (default 8080; 0 picks a free port).") var port: Int?
    @Option(help: "SQLite file or postgres://user@host:port/database URL (default data/countersign.sqlite).") var database: String?
    @Option(name: .customLong("database-pool"), help: "PostgreSQL connections this receiver opens at most (default 10).") var databasePool: Int?
    @Option(name: .customLong("database-connect-timeout"), help: "Seconds to connect to PostgreSQL or wait for a free connection (default 5).") var databaseConnectTimeout: Double?
    @Option(name: .customLong("body-limit"), help: "Largest accepted body in bytes (default 65536).") var bodyLimit: Int?
    @Flag(name: .customLong("allow-development"), help: "Accept postbacks signed with Apple's development keys.") var allowDevelopment = false
    @Option(name: .customLong("keys-dir"), help: "Directory of pinned key PEM files (default ./keys).") var keysDirectory: String?
    @Option(name: .customLong("key"), help: ArgumentHelp("Trust an extra production key.", valueName: "KID=PEM_FILE")) var extraKeys: [String] = []
    @Option(name: .customLong("accept-ad-network"), help: "Accept only these ad network ids (repeatable; none means any).") var acceptedAdNetworks: [String] = []
    @Option(help: "normal (survives a crash) or full (survives power loss).") var durability: String?
    @Option(name: .customLong("log-format"), help: "text or json.") var logFormat: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.") var logLevel: String?
    @Option(name: .customLong("busy-timeout"), help: "Seconds a write waits for a database lock before answering 500 (default 5).") var busyTimeout: Double?
    @Option(name: .customLong("request-timeout"), help: "Seconds a request may take to arrive, headers to last byte (default 10).") var requestTimeout: Double?
    @Option(name: .customLong("idle-timeout"), help: "Seconds an idle keep-alive connection stays open (default 30).") var idleTimeout: Double?
    @Option(name: .customLong("public-rate"), help: "Requests a second one address may send to the Apple Ads routes (default 5).") var publicRate: Double?
    @Option(name: .customLong("public-burst"), help: "Requests one address may send there at once (default 20).") var publicBurst: Double?
    @Option(name: .customLong("adservices-max-queue"), help: "Token jobs waiting at most before 503 queue_full (default 10000).") var adServicesMaxQueue: Int?
    @Option(name: .customLong("adservices-url"), help: "Apple's attribution API (default https://api-adservices.apple.com/api/v1/).") var adServicesURL: String?
    @Option(name: .customLong("adservices-concurrency"), help: "Token exchanges in flight at most (default 8).") var adServicesConcurrency: Int?
    @Option(name: .customLong("adservices-timeout"), help: "Seconds to wait for Apple's answer (default 5; Apple holds up to 1 s).") var adServicesTimeout: Double?
    @Option(name: .customLong("adservices-not-found-interval"), help: "Seconds between tries after a 404 (default 5, Apple's rule).") var adServicesNotFoundInterval: Double?
    @Option(name: .customLong("adservices-backoff"), help: "First delay after a 5xx or network error, doubling (default 5).") var adServicesBackoff: Double?
    @Option(name: .customLong("adservices-max-backoff"), help: "Longest delay between tries (default 3600).") var adServicesMaxBackoff: Double?
    @Option(name: .customLong("adservices-token-lifetime"), help: "Seconds a token lives (default 86400, Apple's 24 h).") var adServicesTokenLifetime: Double?

    /// The settings after flags, environment and config file.
    func resolveSettings(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIFailure) -> ServerSettings {
        var flags: [String: String] = [:]
        flags["host"] = host
        flags["port"] = port.map(String.init)
        flags["database"] = database
        flags["database-pool"] = databasePool.map(String.init)
        flags["database-connect-timeout"] = databaseConnectTimeout.map { String($0) }
        flags["body-limit"] = bodyLimit.map(String.init)
        flags["allow-development"] = allowDevelopment ? "true" : nil
        flags["keys-dir"] = keysDirectory
        flags["durability"] = durability
        flags["log-format"] = logFormat
        flags["log-level"] = logLevel
        flags["busy-timeout"] = busyTimeout.map { String($0) }
        flags["request-timeout"] = requestTimeout.map { String($0) }
        flags["idle-timeout"] = idleTimeout.map { String($0) }
        flags["public-rate"] = publicRate.map { String($0) }
        flags["public-burst"] = publicBurst.map { String($0) }
        flags["adservices-max-queue"] = adServicesMaxQueue.map(String.init)
        flags["adservices-url"] = adServicesURL
        flags["adservices-concurrency"] = adServicesConcurrency.map(String.init)
        flags["adservices-timeout"] = adServicesTimeout.map { String($0) }
        flags["adservices-not-found-interval"] = adServicesNotFoundInterval.map { String($0) }
        flags["adservices-backoff"] = adServicesBackoff.map { String($0) }
        flags["adservices-max-backoff"] = adServicesMaxBackoff.map { String($0) }
        flags["adservices-token-lifetime"] = adServicesTokenLifetime.map { String($0) }
        let flagLists: [String: [String]] = ["keys": extraKeys, "accept-ad-network": acceptedAdNetworks].filter { !$0.value.isEmpty }
        var layers = [
            ServerSettings.Layer(name: "flag", lookup: { flags[$0] }, list: { flagLists[$0] }),
            ServerSettings.environmentLayer(environment),
        ]
        if let path = config ?? environment["COUNTERSIGN_CONFIG"] { layers.append(try ServerSettings.fileLayer(path: path)) }
        var settings = ServerSettings()
        try settings.apply(layers)
        return settings
    }

    func run() async throws {
        let settings = try resolveSettings()
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = settings.logFormat == .json
                ? JSONLogHandler(label: label) : EscapingLogHandler(inner: StreamLogHandler.standardError(label: label))
            handler.logLevel = Logger.Level(rawValue: settings.logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "countersign")
        let keyRing = try KeyOptions(keysDirectory: settings.keysDirectory, extraKeys: settings.extraKeys).loadKeyRing()
        let application: any ApplicationProtocol
        do {
            application = try ServerApplication.build(settings: settings, keyRing: keyRing, logger: logger) { channel in
                let address = channel.localAddress.map { "\($0.ipAddress ?? settings.host):\($0.port ?? settings.port)" } ?? "?"
                logger.notice("countersign listening", metadata: ["address": "\(address)", "database": "\((try? DatabaseLocation(settings.database))?.description ?? "")", "keys": "\(keyRing.entries.count)"])
                // One line on stdout so scripts can learn the port when --port 0 was asked for.
                FileHandle.standardOutput.write(Data("listening on http://\(address)\n".utf8))
            }
        } catch {
            throw CLIFailure.usage("cannot open database \((try? DatabaseLocation(settings.database))?.description ?? settings.database): \(error)")
        }
        try await application.runService()
    }
}

extension KeyOptions {
    init(keysDirectory: String, extraKeys: [String]) {
        self.init()
        self.keysDirectory = keysDirectory
        self.extraKeys = extraKeys
    }
}
