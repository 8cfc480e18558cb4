import CountersignServer
import ArgumentParser
import Configuration
import Foundation
import NIOCore
import Hummingbird
import JWS
import Logging
import Prometheus
import Store

/// `countersign serve`: the HTTP receiver. Its settings are declared once, in `ServerSettings.declarations`; this
/// command hands its flags to them.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Receive postbacks over HTTP and store them in SQLite or PostgreSQL.",
        usage: "countersign serve [--config FILE] [--NAME VALUE ...]",
        discussion: """
        Every setting can also be set as COUNTERSIGN_<NAME> (for example COUNTERSIGN_PORT=9000) or in a JSON \
        --config file ({"port": 9000}); flags win over the environment, which wins over the file.

        Example: countersign serve --port 8080 --database data/countersign.sqlite --allow-development

        SETTINGS:
        \(ServerSettings.declarations.map(\.helpLine).joined(separator: "\n"))
        """
    )

    @Option(help: "JSON config file (also COUNTERSIGN_CONFIG).") var config: String?
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The settings below, as --NAME VALUE.", valueName: "settings"))
    var settings: [String] = []

    /// The settings after flags, environment and config file.
    func resolveSettings(environment: [String: String] = ProcessInfo.processInfo.environment) async throws(CLIFailure) -> ServerSettings {
        var file: SettingsReader.ConfigFile?
        if let path = config ?? environment["COUNTERSIGN_CONFIG"] { file = try await .read(path) }
        var source = try SettingsReader(arguments: settings, settings: ServerSettings.declarations, environment: environment, file: file)
        var resolved = ServerSettings()
        try resolved.read(from: &source)
        return resolved
    }

    func run() async throws {
        // glibc's allocator set for a long-running server before the server's threads start (trust round 4, finding 10).
        SystemAllocator.tune()
        let settings = try await resolveSettings()
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = settings.logFormat == .json
                ? JSONLogHandler(label: label) : EscapingLogHandler(inner: StreamLogHandler.standardError(label: label))
            handler.logLevel = Logger.Level(rawValue: settings.logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "countersign")
        let keyRing = try KeyRingLoader.load(settings)
        let store: StoreDatabase
        do {
            store = try ServerApplication.openStore(settings)
        } catch {
            throw CLIFailure.usage("cannot open database \((try? DatabaseLocation(settings.database))?.description ?? settings.database): "
                                   + "\(StoreOpening.reason(error)); check the path and its permissions, or pass another --database")
        }
        // The store runs beside the application and closes after it: the services drain into it on shutdown.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { store.close() }
            let application = try await ServerApplication(settings: settings, store: store, keyRing: keyRing, logger: logger,
                                                          metrics: PrometheusCollectorRegistry()).application { channel in
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
