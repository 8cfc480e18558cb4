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
    /// Seconds a response may wait for a client that reads none of it (the connection's output stays full).
    package var sendTimeout = 30.0
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
    /// The largest list of identifiers `POST /v1/reconciliation/postbacks` reads, in bytes (a million UUIDs is 37 MB).
    package var reconcileUploadLimit = 48 * 1024 * 1024
    /// How much each step of a reconciliation reads and writes (not a flag: tests make them small).
    package var reconcileSizes = PostbackReconciliation.Sizes()
    /// Groups one `GET /v1/performance` report adds up at most; a report of more is refused, 400 `too_many_groups`.
    package var performanceMaxGroups = PerformanceReader.defaultMaximumGroups
    /// Forwarding rules at most.
    package var forwardMaxRules = ForwardRule.defaultMaximumRules
    /// Whether `/metrics` needs an API key with the `metrics` scope.
    var metricsRequireKey = false
    /// When failed forwarding deliveries and alerts are tried again (first delay, doubling up to the maximum, with jitter).
    package var forwardSchedule = ForwardingSchedule()
    /// Seconds between two checks of the alert rules.
    package var alertInterval: TimeInterval = 60
    /// The Chart.js file the dashboard loads (Debian's `libjs-chart.js`, which `make run` installs).
    package var chartLibrary = "/usr/share/javascript/chart.js/chart.min.js"

    /// Log line format.
    package enum LogFormat: String, Sendable, CaseIterable {
        case text, json
    }

    /// The Apple Ads API user as given (all four or none); ``read(from:)`` turns them into ``appleAdsCredentials``.
    var appleAdsClientID: String?
    var appleAdsTeamID: String?
    var appleAdsKeyID: String?
    var appleAdsPrivateKey: ECPrivateKey?

    /// Every setting of `serve`, each declared once: its flag, environment variable and config-file key, what it
    /// takes, its help, and where it goes. `serve --help` lists them; docs/operations.md's table is checked against them.
    package static var declarations: [Setting] {
        let seconds = "seconds, more than 0", url = "an http:// or https:// URL"
        func within(_ limit: Double) -> (Double) -> Bool { { $0 > 0 && $0 <= limit } }
        func isURL(_ text: String) -> Bool { text.hasPrefix("https://") || text.hasPrefix("http://") }
        return [
            .text("host", \.host, value: "ADDRESS", help: "Address to bind."),
            .integer("port", \.port, in: 0...65535, help: "Port to listen on; 0 picks a free port (printed on start)."),
            Setting(name: "database", flag: "database", value: "PATH|URL", kind: .text, repeatable: false,
                    help: "SQLite file, or postgres://user@host:port/database URL.", defaultText: { $0.database }) { settings, source throws(CLIFailure) in
                let read = try source.secret("database", expected: "an SQLite file path or a postgres:// URL") { text in
                    do throws(DatabaseLocationError) { _ = try DatabaseLocation(text); return nil } catch { return "(\(error.message))" }
                }
                if let read { settings.database = read }
            },
            .integer("database-pool", \.databasePool, in: 1...1000, help: "PostgreSQL connections this receiver opens at most."),
            .number("database-connect-timeout", \.databaseConnectTimeout, expected: "seconds, more than 0 and at most 600", where: within(600),
                    help: "Seconds to connect to PostgreSQL or wait for a free connection."),
            .number("database-statement-timeout", \.databaseStatementTimeout, expected: "seconds, at least 1 and at most 3600",
                    where: { $0 >= 1 && $0 <= 3600 }, help: "Seconds one PostgreSQL statement may run."),
            .integer("body-limit", \.bodyLimit, in: 1...Int(Int32.max), value: "BYTES", help: "Largest accepted body in bytes; larger gets 413."),
            .toggle("allow-development", \.allowDevelopment, help: "Accept Apple's development postbacks (stored, never counted)."),
            .text("keys-dir", \.keysDirectory, value: "DIR", help: "Extra or overriding key PEM files; Apple's keys are built in."),
            .list("keys", \.extraKeys, flag: "key", value: "KID=PEM_FILE", help: "Trust an extra production key."),
            .list("accept-ad-network", \.acceptedAdNetworks, value: "ID", help: "Accept only these ad network ids (none means any)."),
            .choice("durability", \.durability, help: "normal (survives a crash) or full (survives power loss)."),
            .choice("log-format", \.logFormat, help: "Log lines as text or JSON."),
            .text("log-level", \.logLevel, value: "LEVEL", expected: logLevels.joined(separator: ", "), where: logLevels.contains,
                  help: "trace, debug, info, notice, warning, error or critical."),
            .number("busy-timeout", \.busyTimeout, expected: "seconds, 0 or more", where: { $0 >= 0 },
                    help: "SQLite: seconds a write waits for a lock before answering 500."),
            .number("request-timeout", \.requestTimeout, expected: "seconds, more than 0 and at most 3600", where: within(3600),
                    help: "Seconds a request may take to arrive, headers to last byte."),
            .number("idle-timeout", \.idleTimeout, expected: "seconds, more than 0 and at most 3600", where: within(3600),
                    help: "Seconds an idle keep-alive connection stays open."),
            .number("send-timeout", \.sendTimeout, expected: "seconds, more than 0 and at most 3600", where: within(3600),
                    help: "Seconds an answer may wait for a client that reads none of it."),
            .number("public-rate", \.publicRate, expected: "requests a second, more than 0", value: "N", where: { $0 > 0 },
                    help: "Requests a second one address may send to the Apple Ads routes."),
            .number("public-burst", \.publicBurst, expected: "requests, 1 or more", value: "N", where: { $0 >= 1 },
                    help: "Requests one address may send there at once."),
            .text("adservices-url", \.adServicesURL, value: "URL", expected: url, where: isURL, help: "Apple's attribution API."),
            .integer("adservices-concurrency", \.adServicesConcurrency, in: 1...256, help: "Token exchanges in flight at most."),
            .integer("adservices-max-queue", \.adServicesMaximumQueue, in: 1...Int(Int32.max), help: "Token jobs waiting at most before 503 queue_full."),
            .number("adservices-timeout", \.adServicesPolicy.requestTimeout, expected: seconds, where: { $0 > 0 },
                    help: "Seconds to wait for Apple's answer (Apple holds up to 1 s)."),
            .number("adservices-not-found-interval", \.adServicesPolicy.notFoundInterval, expected: seconds, where: { $0 > 0 },
                    help: "Seconds between tries after a 404 (Apple's rule)."),
            .number("adservices-backoff", \.adServicesPolicy.initialBackoff, expected: seconds, where: { $0 > 0 },
                    help: "First delay after a 5xx or network error, doubling."),
            .number("adservices-max-backoff", \.adServicesPolicy.maximumBackoff, expected: seconds, where: { $0 > 0 }, help: "Longest delay between tries."),
            .number("adservices-token-lifetime", \.adServicesPolicy.tokenLifetime, expected: seconds, where: { $0 > 0 },
                    help: "Seconds a token lives (Apple's 24 h)."),
            .optionalText("apple-ads-client-id", \.appleAdsClientID, value: "ID",
                          help: "Apple Ads API user's client id, to read campaign and keyword names."),
            .optionalText("apple-ads-team-id", \.appleAdsTeamID, value: "ID", help: "Apple Ads API user's team id."),
            .optionalText("apple-ads-key-id", \.appleAdsKeyID, value: "ID", help: "Apple Ads API user's key id."),
            Setting(name: "apple-ads-private-key", flag: "apple-ads-private-key", value: "PEM_FILE", kind: .text, repeatable: false,
                    help: "Path of the Apple Ads API user's PEM private key (P-256).", defaultText: { _ in nil }) { settings, source throws(CLIFailure) in
                // The key file's path is read as a secret, so it stays out of logs; the key itself never leaves memory.
                _ = try source.secret("apple-ads-private-key", expected: "the path of the API user's PEM private key (P-256)") { path in
                    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "(cannot read \(path))" }
                    guard let key = try? ECPrivateKey(pem: text), key.curve == .p256 else { return "(\(path) holds no P-256 PEM private key)" }
                    settings.appleAdsPrivateKey = key
                    return nil
                }
            },
            .text("apple-ads-token-url", \.appleAdsTokenURL, value: "URL", expected: url, where: isURL, help: "Apple's OAuth token endpoint."),
            .text("apple-ads-api-url", \.appleAdsAPIURL, value: "URL", expected: url, where: isURL, help: "The Apple Ads Platform API."),
            .text("apple-ads-v5-url", \.appleAdsV5URL, value: "URL", expected: url, where: isURL, help: "The Campaign Management API v5."),
            .number("apple-ads-names-interval", \.appleAdsNamesInterval, expected: seconds, where: { $0 > 0 },
                    help: "Seconds between rounds reading missing names."),
            .number("apple-ads-names-max-age", \.appleAdsNamesMaxAge, expected: seconds, where: { $0 > 0 }, help: "Seconds after which a name is read again."),
            .number("rejected-retention", \.rejectedRetentionDays, expected: "days, more than 0", value: "DAYS", where: { $0 > 0 },
                    help: "Days the bodies of rejected requests are kept; their receipts stay."),
            .integer("rejected-body-budget", \.rejectedBodyBudget, in: 0...1_000_000,
                     help: "Rejected bodies stored per source a minute; beyond it receipts only."),
            .integer("rejected-global-budget", \.rejectedGlobalBudget, in: 0...10_000_000,
                     help: "Rejected bodies stored a minute from all sources; then receipts only."),
            .integer("rejected-receipt-budget", \.rejectedReceiptBudget, in: 0...100_000_000,
                     help: "Receipts of rejected requests stored per source a minute."),
            .integer("rejected-receipt-global-budget", \.rejectedReceiptGlobalBudget, in: 0...100_000_000,
                     help: "Receipts of rejected requests stored a minute from all sources."),
            .integer("unverifiable-budget", \.unverifiableBudget, in: 0...1_000_000, help: "Unverifiable postbacks stored per source a minute; beyond it 429."),
            .integer("unverifiable-global-budget", \.unverifiableGlobalBudget, in: 0...10_000_000,
                     help: "Unverifiable postbacks stored a minute from all sources; then 429."),
            .number("unverifiable-retention", \.unverifiableRetentionDays, expected: "days, more than 0", value: "DAYS", where: { $0 > 0 },
                    help: "Days unverifiable postbacks are kept, then deleted."),
            .integer("public-record-budget", \.publicRecordBudget, in: 0...1_000_000,
                     help: "iAd dictionaries and tokens stored per source a minute; then 429."),
            .integer("public-record-global-budget", \.publicRecordGlobalBudget, in: 0...10_000_000,
                     help: "iAd dictionaries and tokens stored a minute from all sources; then 429."),
            .integer("source-prefix-v4", \.sources.v4Prefix, in: 8...32, value: "BITS", help: "Bits of an IPv4 address that make one source for the budgets."),
            .integer("source-prefix-v6", \.sources.v6Prefix, in: 16...128, value: "BITS", help: "Bits of an IPv6 address that make one source for the budgets."),
            .integer("spend-upload-limit", \.spendUploadLimit, in: 1024...Int(Int32.max), value: "BYTES",
                     help: "Largest spend, claims or rate file accepted over HTTP, in bytes."),
            .integer("reconcile-upload-limit", \.reconcileUploadLimit, in: 1024...Int(Int32.max), value: "BYTES",
                     help: "Largest list of identifiers a reconciliation reads over HTTP, in bytes."),
            .integer("performance-max-groups", \.performanceMaxGroups, in: 1...10_000_000,
                     help: "Groups one performance report adds up at most; more is 400 too_many_groups."),
            .integer("forward-max-rules", \.forwardMaxRules, in: 1...10_000, help: "Forwarding rules at most."),
            .toggle("metrics-require-key", \.metricsRequireKey, help: "Serve /metrics only with an API key that has the metrics scope."),
            .number("forward-backoff", \.forwardSchedule.initialBackoff, expected: "seconds, more than 0 and at most 86400", where: within(86_400),
                    help: "Seconds before a failed forwarding delivery's (or alert's) first retry, doubling."),
            .number("forward-max-backoff", \.forwardSchedule.maximumBackoff, expected: "seconds, more than 0 and at most 86400", where: within(86_400),
                    help: "Longest delay between forwarding (and alert) retries."),
            .number("alert-interval", \.alertInterval, expected: "seconds, more than 0 and at most 86400", where: within(86_400),
                    help: "Seconds between two checks of the alert rules."),
            .text("chart-library", \.chartLibrary, value: "FILE", help: "The Chart.js file the dashboard loads (Debian's libjs-chart.js)."),
        ]
    }

    /// Reads every setting from `source` over the defaults above; a bad value names its source.
    package mutating func read(from source: inout SettingsReader) throws(CLIFailure) {
        for setting in Self.declarations { try setting.read(&self, &source) }
        switch (appleAdsClientID, appleAdsTeamID, appleAdsKeyID, appleAdsPrivateKey) {
        case (nil, nil, nil, nil): appleAdsCredentials = nil
        case (let clientID?, let teamID?, let keyID?, let privateKey?):
            appleAdsCredentials = AppleAdsAPI.Credentials(clientID: clientID, teamID: teamID, keyID: keyID, privateKey: privateKey)
        default:
            throw CLIFailure.usage("apple-ads-client-id, apple-ads-team-id, apple-ads-key-id and apple-ads-private-key go together; set all four to read Apple Ads names, or none")
        }
        try source.refuseUnknownFileKeys()
    }

    /// The settings `names` alone, from `arguments` (their flags) and `environment`, over the defaults: for commands
    /// that share a few of `serve`'s settings (`--database`, `--keys-dir`, `--key`) and read them as it does.
    package static func reading(_ names: Set<String>, arguments: [String], environment: [String: String]) throws(CLIFailure) -> ServerSettings {
        let declarations = Self.declarations.filter { names.contains($0.name) }
        var source = try SettingsReader(arguments: arguments, settings: declarations, environment: environment)
        var settings = ServerSettings()
        for setting in declarations { try setting.read(&settings, &source) }
        return settings
    }

    /// The log levels `log-level` accepts.
    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
}
