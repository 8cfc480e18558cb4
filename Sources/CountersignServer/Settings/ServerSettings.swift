import AdServices
import Foundation
import JWS
import Store

/// Every `serve` setting with its default, the one place defaults live. `read(from:)` takes values from flags, then
/// `COUNTERSIGN_*` environment variables, then the `--config` JSON file (through swift-configuration).
package struct ServerSettings: Sendable {
    /// The defaults, before flags, environment and the config file.
    package init() {}

    package var host = "127.0.0.1"
    package var port = 8080
    package var database = "data/countersign.sqlite"
    package var bodyLimit = 64 * 1024
    package var allowDevelopment = false
    package var keysDirectory = "keys"
    package var extraKeys: [String] = []
    package var acceptedAdNetworks: [String] = []
    package var durability = Durability.full
    package var logFormat = LogFormat.text
    package var logLevel = "info"
    package var busyTimeout = 5.0
    /// PostgreSQL connections one receiver opens at most.
    package var databasePool = 10
    /// Seconds to open a PostgreSQL connection, or to wait for a free one, before answering 503.
    package var databaseConnectTimeout = 5.0
    /// Seconds one PostgreSQL statement may run before the server cancels it (and the request gets 500).
    package var databaseStatementTimeout = 30.0
    /// Seconds one request may take to arrive, from its first header line to its last body byte.
    package var requestTimeout = 10.0
    /// Seconds a connection may stay open with no request in progress.
    package var idleTimeout = 30.0
    /// Where AdServices tokens are exchanged, and Apple's schedule (adjustable for stand-ins and tests).
    package var adServicesURL = "https://api-adservices.apple.com/api/v1/"
    package var adServicesPolicy = RetryPolicy()
    package var adServicesConcurrency = 8
    /// Token jobs waiting at most; a new token beyond it is answered 503 `queue_full`.
    package var adServicesMaximumQueue = 10_000
    /// Requests a second one address may make to the public Apple Ads routes, and at once.
    package var publicRate = 5.0
    package var publicBurst = 20.0
    /// The Apple Ads API user that reads campaign, ad-group and keyword names (none: names are not read).
    var appleAdsCredentials: AppleAdsAPI.Credentials?
    /// Where Apple's OAuth tokens, Platform API and Campaign Management API v5 are (adjustable for stand-ins and tests).
    package var appleAdsTokenURL = "https://appleid.apple.com/auth/oauth2/token"
    package var appleAdsAPIURL = "https://api.ads.apple.com/v1/"
    package var appleAdsV5URL = "https://api.searchads.apple.com/api/v5/"
    /// Seconds between rounds that read missing names, and the age after which a name is read again.
    package var appleAdsNamesInterval = 3600.0
    package var appleAdsNamesMaxAge = 7 * 86_400.0
    /// Days the bodies of rejected requests are kept (their receipts stay).
    package var rejectedRetentionDays = 30.0
    /// Bodies of rejected requests stored per source per minute; beyond it only the receipt is stored.
    package var rejectedBodyBudget = 60
    /// Bodies of rejected requests stored per minute from all sources together; beyond it only the receipt is stored.
    package var rejectedGlobalBudget = 120
    /// Receipts of rejected requests stored per source per minute; beyond it nothing is stored.
    package var rejectedReceiptBudget = 300
    /// Receipts of rejected requests stored per minute from all sources together; beyond it nothing is stored.
    package var rejectedReceiptGlobalBudget = 1200
    /// Unverifiable postbacks stored per source per minute; beyond it they are answered 429.
    package var unverifiableBudget = 60
    /// Unverifiable postbacks stored per minute from all sources together; beyond it they are answered 429.
    package var unverifiableGlobalBudget = 300
    /// Days an unverifiable postback (and one `reverify` found invalid) is kept before it is deleted.
    package var unverifiableRetentionDays = 30.0
    /// How peers are grouped into sources for the budgets and the public routes' rate limit.
    package var sources = SourceGrouping()
    /// iAd dictionaries and AdServices tokens stored per source per minute; beyond it 429.
    package var publicRecordBudget = 60
    /// iAd dictionaries and AdServices tokens stored per minute from all sources together; beyond it 429.
    package var publicRecordGlobalBudget = 300
    /// The largest spend, claims or rate file accepted over HTTP, in bytes (a million lines is about 60 MB).
    package var spendUploadLimit = 128 * 1024 * 1024
    /// Forwarding rules at most.
    package var forwardMaxRules = ForwardRule.defaultMaximumRules
    /// Whether `/metrics` needs an API key with the `metrics` scope.
    var metricsRequireKey = false
    /// When failed forwarding deliveries are tried again (first delay, doubling up to the maximum, with jitter).
    package var forwardSchedule = ForwardingSchedule()
    /// The Chart.js file the dashboard loads (Debian's `libjs-chart.js`, which `make run` installs).
    package var chartLibrary = "/usr/share/javascript/chart.js/chart.min.js"

    /// Log line format.
    package enum LogFormat: String, Sendable, CaseIterable {
        case text, json
    }

    /// Reads every setting from `source` over the defaults above; a bad value names its source.
    package mutating func read(from source: inout SettingsReader) throws(CLIFailure) {
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
        chartLibrary = try source.string("chart-library") ?? chartLibrary
        metricsRequireKey = try source.bool("metrics-require-key") ?? metricsRequireKey
        rejectedRetentionDays = try source.double("rejected-retention", expected: "days, more than 0", where: { $0 > 0 }) ?? rejectedRetentionDays
        rejectedBodyBudget = try source.int("rejected-body-budget", in: 0...1_000_000) ?? rejectedBodyBudget
        rejectedGlobalBudget = try source.int("rejected-global-budget", in: 0...10_000_000) ?? rejectedGlobalBudget
        rejectedReceiptBudget = try source.int("rejected-receipt-budget", in: 0...100_000_000) ?? rejectedReceiptBudget
        rejectedReceiptGlobalBudget = try source.int("rejected-receipt-global-budget", in: 0...100_000_000) ?? rejectedReceiptGlobalBudget
        unverifiableBudget = try source.int("unverifiable-budget", in: 0...1_000_000) ?? unverifiableBudget
        unverifiableGlobalBudget = try source.int("unverifiable-global-budget", in: 0...10_000_000) ?? unverifiableGlobalBudget
        unverifiableRetentionDays = try source.double("unverifiable-retention", expected: "days, more than 0", where: { $0 > 0 }) ?? unverifiableRetentionDays
        sources.v4Prefix = try source.int("source-prefix-v4", in: 8...32) ?? sources.v4Prefix
        sources.v6Prefix = try source.int("source-prefix-v6", in: 16...128) ?? sources.v6Prefix
        forwardMaxRules = try source.int("forward-max-rules", in: 1...10_000) ?? forwardMaxRules
        spendUploadLimit = try source.int("spend-upload-limit", in: 1024...Int(Int32.max)) ?? spendUploadLimit
        publicRecordBudget = try source.int("public-record-budget", in: 0...1_000_000) ?? publicRecordBudget
        publicRecordGlobalBudget = try source.int("public-record-global-budget", in: 0...10_000_000) ?? publicRecordGlobalBudget
        forwardSchedule.initialBackoff = try source.double("forward-backoff", expected: "seconds, more than 0 and at most 86400",
                                                            where: { $0 > 0 && $0 <= 86_400 }) ?? forwardSchedule.initialBackoff
        forwardSchedule.maximumBackoff = try source.double("forward-max-backoff", expected: "seconds, more than 0 and at most 86400",
                                                            where: { $0 > 0 && $0 <= 86_400 }) ?? forwardSchedule.maximumBackoff
        try readAppleAds(from: &source)
        try source.refuseUnknownFileKeys()
    }

    /// The Apple Ads API user (all four settings or none) and where Apple's APIs are.
    private mutating func readAppleAds(from source: inout SettingsReader) throws(CLIFailure) {
        let url = "an http:// or https:// URL"
        func isURL(_ text: String) -> Bool { text.hasPrefix("https://") || text.hasPrefix("http://") }
        appleAdsTokenURL = try source.string("apple-ads-token-url", expected: url, where: isURL) ?? appleAdsTokenURL
        appleAdsAPIURL = try source.string("apple-ads-api-url", expected: url, where: isURL) ?? appleAdsAPIURL
        appleAdsV5URL = try source.string("apple-ads-v5-url", expected: url, where: isURL) ?? appleAdsV5URL
        appleAdsNamesInterval = try source.double("apple-ads-names-interval", expected: "seconds, more than 0", where: { $0 > 0 }) ?? appleAdsNamesInterval
        appleAdsNamesMaxAge = try source.double("apple-ads-names-max-age", expected: "seconds, more than 0", where: { $0 > 0 }) ?? appleAdsNamesMaxAge
        let clientID = try source.string("apple-ads-client-id")
        let teamID = try source.string("apple-ads-team-id")
        let keyID = try source.string("apple-ads-key-id")
        var privateKey: ECPrivateKey?
        // The key file's path is read as a secret, so it stays out of logs; the key itself never leaves memory.
        _ = try source.secret("apple-ads-private-key", expected: "the path of the API user's PEM private key (P-256)") { path in
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "(cannot read \(path))" }
            guard let key = try? ECPrivateKey(pem: text), key.curve == .p256 else { return "(\(path) holds no P-256 PEM private key)" }
            privateKey = key
            return nil
        }
        switch (clientID, teamID, keyID, privateKey) {
        case (nil, nil, nil, nil): appleAdsCredentials = nil
        case (let clientID?, let teamID?, let keyID?, let privateKey?):
            appleAdsCredentials = AppleAdsAPI.Credentials(clientID: clientID, teamID: teamID, keyID: keyID, privateKey: privateKey)
        default:
            throw CLIFailure.usage("apple-ads-client-id, apple-ads-team-id, apple-ads-key-id and apple-ads-private-key go together; set all four to read Apple Ads names, or none")
        }
    }

    /// The `database` setting alone (for commands that take only `--database`), checked as a location.
    package static func database(from source: inout SettingsReader) throws(CLIFailure) -> String? {
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
