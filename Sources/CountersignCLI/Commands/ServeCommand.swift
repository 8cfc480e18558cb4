import CountersignServer
import ArgumentParser
import Configuration
import Foundation
import NIOCore
import Hummingbird
import JWS
import Logging
import Store

/// `countersign serve`: the HTTP receiver.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Receive postbacks over HTTP and store them in SQLite or PostgreSQL.",
        discussion: """
        Every option can also be set as COUNTERSIGN_<NAME> (for example COUNTERSIGN_PORT=9000) or in a JSON \
        --config file ({"port": 9000}); flags win over the environment, which wins over the file.

        Example: countersign serve --port 8080 --database data/countersign.sqlite --allow-development
        """
    )

    /// The defaults the help text shows (they live in `ServerSettings`).
    private static let defaults = ServerSettings()

    /// A number of seconds as help text shows it: `5`, `2.5`.
    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    @Option(help: "JSON config file.") var config: String?
    @Option(help: "Address to bind (default \(ServeCommand.defaults.host)).") var host: String?
    @Option(help: "Port to listen on (default \(ServeCommand.defaults.port); 0 picks a free port).") var port: Int?
    @Option(help: "SQLite file or postgres://user@host:port/database URL (default \(ServeCommand.defaults.database)).") var database: String?
    @Option(name: .customLong("database-pool"), help: "PostgreSQL connections this receiver opens at most (default \(ServeCommand.defaults.databasePool)).") var databasePool: Int?
    @Option(name: .customLong("database-connect-timeout"), help: "Seconds to connect to PostgreSQL or wait for a free connection (default \(ServeCommand.seconds(defaults.databaseConnectTimeout))).") var databaseConnectTimeout: Double?
    @Option(name: .customLong("database-statement-timeout"), help: "Seconds one PostgreSQL statement may run (default \(ServeCommand.seconds(defaults.databaseStatementTimeout))).") var databaseStatementTimeout: Double?
    @Option(name: .customLong("body-limit"), help: "Largest accepted body in bytes (default \(ServeCommand.defaults.bodyLimit)).") var bodyLimit: Int?
    @Flag(name: .customLong("allow-development"), help: "Accept postbacks signed with Apple's development keys.") var allowDevelopment = false
    @Option(name: .customLong("keys-dir"), help: "Directory of extra or overriding key PEM files; Apple's keys are built in (default \(ServeCommand.defaults.keysDirectory), if present).") var keysDirectory: String?
    @Option(name: .customLong("key"), help: ArgumentHelp("Trust an extra production key.", valueName: "KID=PEM_FILE")) var extraKeys: [String] = []
    @Option(name: .customLong("accept-ad-network"), help: "Accept only these ad network ids (repeatable; none means any).") var acceptedAdNetworks: [String] = []
    @Option(help: "normal (survives a crash) or full (survives power loss) (default \(ServeCommand.defaults.durability.rawValue)).") var durability: String?
    @Option(name: .customLong("log-format"), help: "text or json (default \(ServeCommand.defaults.logFormat.rawValue)).") var logFormat: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default \(ServeCommand.defaults.logLevel)).") var logLevel: String?
    @Option(name: .customLong("busy-timeout"), help: "Seconds a write waits for a database lock before answering 500 (default \(ServeCommand.seconds(defaults.busyTimeout))).") var busyTimeout: Double?
    @Option(name: .customLong("request-timeout"), help: "Seconds a request may take to arrive, headers to last byte (default \(ServeCommand.seconds(defaults.requestTimeout))).") var requestTimeout: Double?
    @Option(name: .customLong("idle-timeout"), help: "Seconds an idle keep-alive connection stays open (default \(ServeCommand.seconds(defaults.idleTimeout))).") var idleTimeout: Double?
    @Option(name: .customLong("public-rate"), help: "Requests a second one address may send to the Apple Ads routes (default \(ServeCommand.seconds(defaults.publicRate))).") var publicRate: Double?
    @Option(name: .customLong("public-burst"), help: "Requests one address may send there at once (default \(ServeCommand.seconds(defaults.publicBurst))).") var publicBurst: Double?
    @Option(name: .customLong("adservices-max-queue"), help: "Token jobs waiting at most before 503 queue_full (default \(ServeCommand.defaults.adServicesMaximumQueue)).") var adServicesMaxQueue: Int?
    @Option(name: .customLong("adservices-url"), help: "Apple's attribution API (default \(ServeCommand.defaults.adServicesURL)).") var adServicesURL: String?
    @Option(name: .customLong("adservices-concurrency"), help: "Token exchanges in flight at most (default \(ServeCommand.defaults.adServicesConcurrency)).") var adServicesConcurrency: Int?
    @Option(name: .customLong("adservices-timeout"), help: "Seconds to wait for Apple's answer (default \(ServeCommand.seconds(defaults.adServicesPolicy.requestTimeout)); Apple holds up to 1 s).") var adServicesTimeout: Double?
    @Option(name: .customLong("adservices-not-found-interval"), help: "Seconds between tries after a 404 (default \(ServeCommand.seconds(defaults.adServicesPolicy.notFoundInterval)), Apple's rule).") var adServicesNotFoundInterval: Double?
    @Option(name: .customLong("adservices-backoff"), help: "First delay after a 5xx or network error, doubling (default \(ServeCommand.seconds(defaults.adServicesPolicy.initialBackoff))).") var adServicesBackoff: Double?
    @Option(name: .customLong("adservices-max-backoff"), help: "Longest delay between tries (default \(ServeCommand.seconds(defaults.adServicesPolicy.maximumBackoff))).") var adServicesMaxBackoff: Double?
    @Option(name: .customLong("adservices-token-lifetime"), help: "Seconds a token lives (default \(ServeCommand.seconds(defaults.adServicesPolicy.tokenLifetime)), Apple's 24 h).") var adServicesTokenLifetime: Double?
    @Option(name: .customLong("apple-ads-client-id"), help: "Apple Ads API user's client id, to read campaign, ad-group and keyword names.") var appleAdsClientID: String?
    @Option(name: .customLong("apple-ads-team-id"), help: "Apple Ads API user's team id.") var appleAdsTeamID: String?
    @Option(name: .customLong("apple-ads-key-id"), help: "Apple Ads API user's key id.") var appleAdsKeyID: String?
    @Option(name: .customLong("apple-ads-private-key"), help: "Path of the Apple Ads API user's PEM private key.") var appleAdsPrivateKey: String?
    @Option(name: .customLong("apple-ads-token-url"), help: "Apple's OAuth token endpoint (default \(ServeCommand.defaults.appleAdsTokenURL)).") var appleAdsTokenURL: String?
    @Option(name: .customLong("apple-ads-api-url"), help: "The Apple Ads Platform API (default \(ServeCommand.defaults.appleAdsAPIURL)).") var appleAdsAPIURL: String?
    @Option(name: .customLong("apple-ads-v5-url"), help: "The Campaign Management API v5 (default \(ServeCommand.defaults.appleAdsV5URL)).") var appleAdsV5URL: String?
    @Option(name: .customLong("apple-ads-names-interval"), help: "Seconds between rounds reading missing names (default \(ServeCommand.seconds(defaults.appleAdsNamesInterval))).") var appleAdsNamesInterval: Double?
    @Option(name: .customLong("rejected-retention"), help: "Days the bodies of rejected requests are kept; their receipts stay (default \(ServeCommand.seconds(defaults.rejectedRetentionDays))).") var rejectedRetention: Double?
    @Option(name: .customLong("rejected-body-budget"), help: "Rejected bodies stored per source address a minute; beyond it only the receipt (default \(ServeCommand.defaults.rejectedBodyBudget)).") var rejectedBodyBudget: Int?
    @Option(name: .customLong("rejected-global-budget"), help: "Rejected bodies stored a minute from all sources; beyond it only receipts (default \(ServeCommand.defaults.rejectedGlobalBudget)).") var rejectedGlobalBudget: Int?
    @Option(name: .customLong("rejected-receipt-budget"), help: "Receipts of rejected requests stored per source a minute; beyond it none (default \(ServeCommand.defaults.rejectedReceiptBudget)).") var rejectedReceiptBudget: Int?
    @Option(name: .customLong("rejected-receipt-global-budget"), help: "Receipts of rejected requests stored a minute from all sources; beyond it none (default \(ServeCommand.defaults.rejectedReceiptGlobalBudget)).") var rejectedReceiptGlobalBudget: Int?
    @Option(name: .customLong("unverifiable-budget"), help: "Unverifiable postbacks stored per source a minute; beyond it 429 (default \(ServeCommand.defaults.unverifiableBudget)).") var unverifiableBudget: Int?
    @Option(name: .customLong("unverifiable-global-budget"), help: "Unverifiable postbacks stored a minute from all sources; beyond it 429 (default \(ServeCommand.defaults.unverifiableGlobalBudget)).") var unverifiableGlobalBudget: Int?
    @Option(name: .customLong("unverifiable-retention"), help: "Days unverifiable postbacks are kept, then deleted (default \(ServeCommand.seconds(defaults.unverifiableRetentionDays))).") var unverifiableRetention: Double?
    @Option(name: .customLong("source-prefix-v4"), help: "Bits of an IPv4 address that make one source for the budgets (default \(ServeCommand.defaults.sources.v4Prefix)).") var sourcePrefixV4: Int?
    @Option(name: .customLong("source-prefix-v6"), help: "Bits of an IPv6 address that make one source for the budgets (default \(ServeCommand.defaults.sources.v6Prefix)).") var sourcePrefixV6: Int?
    @Option(name: .customLong("public-record-budget"), help: "iAd dictionaries and AdServices tokens stored per source a minute; beyond it 429 (default \(ServeCommand.defaults.publicRecordBudget)).") var publicRecordBudget: Int?
    @Option(name: .customLong("public-record-global-budget"), help: "iAd dictionaries and AdServices tokens stored a minute from all sources; beyond it 429 (default \(ServeCommand.defaults.publicRecordGlobalBudget)).") var publicRecordGlobalBudget: Int?
    @Option(name: .customLong("spend-upload-limit"), help: "Largest spend, claims or rate file accepted over HTTP, in bytes (default \(ServeCommand.defaults.spendUploadLimit)).") var spendUploadLimit: Int?
    @Option(name: .customLong("forward-max-rules"), help: "Forwarding rules at most (default \(ServeCommand.defaults.forwardMaxRules)).") var forwardMaxRules: Int?
    @Option(name: .customLong("forward-backoff"), help: "Seconds before the first retry of a failed forwarding delivery, doubling (default \(ServeCommand.seconds(defaults.forwardSchedule.initialBackoff))).") var forwardBackoff: Double?
    @Option(name: .customLong("forward-max-backoff"), help: "Longest delay between forwarding retries (default \(ServeCommand.seconds(defaults.forwardSchedule.maximumBackoff))).") var forwardMaxBackoff: Double?
    @Flag(name: .customLong("metrics-require-key"), help: "Serve /metrics only with an API key that has the metrics scope.") var metricsRequireKey = false
    @Option(name: .customLong("chart-library"), help: "The Chart.js file the dashboard loads (default \(ServeCommand.defaults.chartLibrary), Debian's libjs-chart.js).") var chartLibrary: String?
    @Option(name: .customLong("apple-ads-names-max-age"), help: "Seconds after which a name is read again (default \(ServeCommand.seconds(defaults.appleAdsNamesMaxAge))).") var appleAdsNamesMaxAge: Double?

    /// The settings after flags, environment and config file.
    func resolveSettings(environment: [String: String] = ProcessInfo.processInfo.environment) async throws(CLIFailure) -> ServerSettings {
        let flags: [String: ConfigContent?] = [
            "host": host.map { .string($0) },
            "port": port.map { .int($0) },
            "database": database.map { .string($0) },
            "database-pool": databasePool.map { .int($0) },
            "database-connect-timeout": databaseConnectTimeout.map { .double($0) },
            "database-statement-timeout": databaseStatementTimeout.map { .double($0) },
            "body-limit": bodyLimit.map { .int($0) },
            "allow-development": allowDevelopment ? .bool(true) : nil,
            "keys-dir": keysDirectory.map { .string($0) },
            "keys": extraKeys.isEmpty ? nil : .stringArray(extraKeys),
            "accept-ad-network": acceptedAdNetworks.isEmpty ? nil : .stringArray(acceptedAdNetworks),
            "durability": durability.map { .string($0) },
            "log-format": logFormat.map { .string($0) },
            "log-level": logLevel.map { .string($0) },
            "busy-timeout": busyTimeout.map { .double($0) },
            "request-timeout": requestTimeout.map { .double($0) },
            "idle-timeout": idleTimeout.map { .double($0) },
            "public-rate": publicRate.map { .double($0) },
            "public-burst": publicBurst.map { .double($0) },
            "adservices-max-queue": adServicesMaxQueue.map { .int($0) },
            "adservices-url": adServicesURL.map { .string($0) },
            "adservices-concurrency": adServicesConcurrency.map { .int($0) },
            "adservices-timeout": adServicesTimeout.map { .double($0) },
            "adservices-not-found-interval": adServicesNotFoundInterval.map { .double($0) },
            "adservices-backoff": adServicesBackoff.map { .double($0) },
            "adservices-max-backoff": adServicesMaxBackoff.map { .double($0) },
            "adservices-token-lifetime": adServicesTokenLifetime.map { .double($0) },
            "apple-ads-client-id": appleAdsClientID.map { .string($0) },
            "apple-ads-team-id": appleAdsTeamID.map { .string($0) },
            "apple-ads-key-id": appleAdsKeyID.map { .string($0) },
            "apple-ads-private-key": appleAdsPrivateKey.map { .string($0) },
            "apple-ads-token-url": appleAdsTokenURL.map { .string($0) },
            "apple-ads-api-url": appleAdsAPIURL.map { .string($0) },
            "apple-ads-v5-url": appleAdsV5URL.map { .string($0) },
            "apple-ads-names-interval": appleAdsNamesInterval.map { .double($0) },
            "apple-ads-names-max-age": appleAdsNamesMaxAge.map { .double($0) },
            "chart-library": chartLibrary.map { .string($0) },
            "metrics-require-key": metricsRequireKey ? .bool(true) : nil,
            "rejected-retention": rejectedRetention.map { .double($0) },
            "rejected-body-budget": rejectedBodyBudget.map { .int($0) },
            "rejected-global-budget": rejectedGlobalBudget.map { .int($0) },
            "rejected-receipt-budget": rejectedReceiptBudget.map { .int($0) },
            "rejected-receipt-global-budget": rejectedReceiptGlobalBudget.map { .int($0) },
            "unverifiable-budget": unverifiableBudget.map { .int($0) },
            "unverifiable-global-budget": unverifiableGlobalBudget.map { .int($0) },
            "unverifiable-retention": unverifiableRetention.map { .double($0) },
            "source-prefix-v4": sourcePrefixV4.map { .int($0) },
            "source-prefix-v6": sourcePrefixV6.map { .int($0) },
            "forward-max-rules": forwardMaxRules.map { .int($0) },
            "spend-upload-limit": spendUploadLimit.map { .int($0) },
            "public-record-budget": publicRecordBudget.map { .int($0) },
            "public-record-global-budget": publicRecordGlobalBudget.map { .int($0) },
            "forward-backoff": forwardBackoff.map { .double($0) },
            "forward-max-backoff": forwardMaxBackoff.map { .double($0) },
        ]
        var file: SettingsReader.ConfigFile?
        if let path = config ?? environment["COUNTERSIGN_CONFIG"] { file = try await .read(path) }
        var source = SettingsReader(flags: flags, flagName: { $0 == "keys" ? "--key" : "--" + $0 }, environment: environment, file: file)
        var settings = ServerSettings()
        try settings.read(from: &source)
        return settings
    }

    func run() async throws {
        let settings = try await resolveSettings()
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = settings.logFormat == .json
                ? JSONLogHandler(label: label) : EscapingLogHandler(inner: StreamLogHandler.standardError(label: label))
            handler.logLevel = Logger.Level(rawValue: settings.logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "countersign")
        let keyRing = try KeyOptions(keysDirectory: settings.keysDirectory, extraKeys: settings.extraKeys).loadKeyRing()
        let store: StoreDatabase
        do {
            store = try ServerApplication.openStore(settings)
        } catch {
            throw CLIFailure.usage("cannot open database \((try? DatabaseLocation(settings.database))?.description ?? settings.database): "
                                   + "\(StoreOpening.reason(error)); check the path and its permissions, or pass another --database")
        }
        // The store runs beside the application and closes after it: the services drain into it on shutdown.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { store.close() }
            let application = try await ServerApplication(settings: settings, store: store, keyRing: keyRing, logger: logger).application { channel in
                let address = channel.localAddress.map { "\($0.ipAddress ?? settings.host):\($0.port ?? settings.port)" } ?? "?"
                // The effective policy, so an operator sees at once what this receiver counts and how it stores.
                let location = try? DatabaseLocation(settings.database)
                let engine = if case .postgres? = location { "postgres" } else { "sqlite" }
                logger.notice("countersign listening", metadata: [
                    "version": "\(Countersign.version)", "address": "\(address)", "engine": "\(engine)", "database": "\(location?.description ?? "")",
                    "durability": "\(settings.durability.rawValue)", "allow_development": "\(settings.allowDevelopment)",
                    "accepted_ad_networks": "\(settings.acceptedAdNetworks.isEmpty ? "any" : settings.acceptedAdNetworks.joined(separator: ","))",
                    "keys": "\(keyRing.entries.count)",
                ])
                // One line on stdout so scripts can learn the port when --port 0 was asked for.
                FileHandle.standardOutput.write(Data("listening on http://\(address)\n".utf8))
            }
            do {
                try await application.runService()
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                throw CLIFailure.usage("port \(settings.port) on \(settings.host) is in use (another countersign serve?); stop that process or choose another --port")
            }
        }
    }
}

extension KeyOptions {
    init(keysDirectory: String, extraKeys: [String]) {
        self.init()
        self.keysDirectory = keysDirectory
        self.extraKeys = extraKeys
    }
}
