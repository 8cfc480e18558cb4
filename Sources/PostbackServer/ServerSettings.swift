import AdServices
import Foundation
import JWS
import Store

/// Every `serve` setting with its default, the one place defaults live. `read(from:)` takes values from flags, then
/// `COUNTERSIGN_*` environment variables, then the `--config` JSON file (through swift-configuration).
struct ServerSettings: Sendable {
    var host = "127.0.0.1"
    var port = 8080
    var database = "data/countersign.sqlite"
    var bodyLimit = 64 * 1024
    var allowDevelopment = false
    var keysDirectory = "keys"
    var extraKeys: [String] = []
    var acceptedAdNetworks: [String] = []
    var durability = Durability.normal
    var logFormat = LogFormat.text
    var logLevel = "info"
    var busyTimeout = 5.0
    /// PostgreSQL connections one receiver opens at most.
    var databasePool = 10
    /// Seconds to open a PostgreSQL connection, or to wait for a free one, before answering 503.
    var databaseConnectTimeout = 5.0
    /// Seconds one PostgreSQL statement may run before the server cancels it (and the request gets 500).
    var databaseStatementTimeout = 30.0
    /// Seconds one request may take to arrive, from its first header line to its last body byte.
    var requestTimeout = 10.0
    /// Seconds a connection may stay open with no request in progress.
    var idleTimeout = 30.0
    /// Where AdServices tokens are exchanged, and Apple's schedule (adjustable for stand-ins and tests).
    var adServicesURL = "https://api-adservices.apple.com/api/v1/"
    var adServicesPolicy = RetryPolicy()
    var adServicesConcurrency = 8
    /// Token jobs waiting at most; a new token beyond it is answered 503 `queue_full`.
    var adServicesMaximumQueue = 10_000
    /// Requests a second one address may make to the public Apple Ads routes, and at once.
    var publicRate = 5.0
    var publicBurst = 20.0

    /// Log line format.
    enum LogFormat: String, Sendable, CaseIterable {
        case text, json
    }

    /// Reads every setting from `source` over the defaults above; a bad value names its source.
    mutating func read(from source: inout SettingsReader) throws(CLIFailure) {
        let seconds = "seconds, more than 0"
        host = try source.string("host") ?? host
        port = try source.int("port", in: 0...65535) ?? port
        database = try Self.database(from: &source) ?? database
        databasePool = try source.int("database-pool", in: 1...1000) ?? databasePool
        databaseConnectTimeout = try source.double("database-connect-timeout", expected: "seconds, more than 0 and at most 600",
                                                   where: { $0 > 0 && $0 <= 600 }) ?? databaseConnectTimeout
        databaseStatementTimeout = try source.double("database-statement-timeout", expected: "seconds, at least 1 and at most 3600",
                                                     where: { $0 >= 1 && $0 <= 3600 }) ?? databaseStatementTimeout
        bodyLimit = try source.int("body-limit", in: 1...Int(Int32.max)) ?? bodyLimit
        allowDevelopment = try source.bool("allow-development") ?? allowDevelopment
        keysDirectory = try source.string("keys-dir") ?? keysDirectory
        extraKeys = try source.list("keys") ?? extraKeys
        acceptedAdNetworks = try source.list("accept-ad-network") ?? acceptedAdNetworks
        durability = try source.choice("durability", as: Durability.self) ?? durability
        logFormat = try source.choice("log-format", as: LogFormat.self) ?? logFormat
        logLevel = try source.string("log-level", expected: Self.logLevels.joined(separator: ", "), where: Self.logLevels.contains) ?? logLevel
        busyTimeout = try source.double("busy-timeout", expected: "seconds, 0 or more", where: { $0 >= 0 }) ?? busyTimeout
        requestTimeout = try source.double("request-timeout", expected: "seconds, more than 0 and at most 3600",
                                           where: { $0 > 0 && $0 <= 3600 }) ?? requestTimeout
        idleTimeout = try source.double("idle-timeout", expected: "seconds, more than 0 and at most 3600",
                                        where: { $0 > 0 && $0 <= 3600 }) ?? idleTimeout
        publicRate = try source.double("public-rate", expected: "requests a second, more than 0", where: { $0 > 0 }) ?? publicRate
        publicBurst = try source.double("public-burst", expected: "requests, 1 or more", where: { $0 >= 1 }) ?? publicBurst
        adServicesURL = try source.string("adservices-url", expected: "an http:// or https:// URL",
                                          where: { $0.hasPrefix("https://") || $0.hasPrefix("http://") }) ?? adServicesURL
        adServicesConcurrency = try source.int("adservices-concurrency", in: 1...256) ?? adServicesConcurrency
        adServicesMaximumQueue = try source.int("adservices-max-queue", in: 1...Int(Int32.max)) ?? adServicesMaximumQueue
        for (name, path) in Self.adServicesDurations {
            if let value = try source.double(name, expected: seconds, where: { $0 > 0 }) { adServicesPolicy[keyPath: path] = value }
        }
        try source.refuseUnknownFileKeys()
    }

    /// The `database` setting alone (for commands that take only `--database`), checked as a location.
    static func database(from source: inout SettingsReader) throws(CLIFailure) -> String? {
        try source.secret("database", expected: "an SQLite file path or a postgres:// URL") { text in
            do throws(DatabaseLocationError) { _ = try DatabaseLocation(text); return nil } catch { return "(\(error.message))" }
        }
    }

    /// The log levels `log-level` accepts.
    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The AdServices schedule settings (seconds) and the policy field each sets.
    static var adServicesDurations: [(String, WritableKeyPath<RetryPolicy, TimeInterval>)] {
        [
            ("adservices-timeout", \.requestTimeout),
            ("adservices-not-found-interval", \.notFoundInterval),
            ("adservices-backoff", \.initialBackoff),
            ("adservices-max-backoff", \.maximumBackoff),
            ("adservices-token-lifetime", \.tokenLifetime),
        ]
    }
}
