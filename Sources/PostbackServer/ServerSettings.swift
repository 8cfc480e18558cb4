import AdServices
import Foundation
import JWS
import Store

/// Every `serve` setting with its default. Precedence: flag, then `COUNTERSIGN_*` environment variable,
/// then the `--config` JSON file, then the default below.
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

    /// A source of setting values by name (`port`, `body-limit`, ...).
    struct Layer {
        let name: String
        let lookup: (String) -> String?
        let list: (String) -> [String]?
    }

    /// The environment as a layer: `body-limit` reads `COUNTERSIGN_BODY_LIMIT`; lists are comma-separated.
    static func environmentLayer(_ environment: [String: String]) -> Layer {
        func key(_ name: String) -> String { "COUNTERSIGN_" + name.uppercased().replacingOccurrences(of: "-", with: "_") }
        return Layer(
            name: "environment",
            lookup: { environment[key($0)] },
            list: { environment[key($0)].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } }
        )
    }

    /// A JSON config file as a layer: `{"port": 8080, "keys": ["kid=file.pem"], ...}`.
    static func fileLayer(path: String) throws(CLIFailure) -> Layer {
        guard let data = FileManager.default.contents(atPath: path) else { throw CLIFailure.usage("cannot read config file \(path)") }
        guard let object = (try? JSONParser.parse(Array(data)))?.object else { throw CLIFailure.usage("\(path) is not a JSON object") }
        let known = Set(["host", "port", "database", "body-limit", "allow-development", "keys-dir", "keys", "accept-ad-network",
                         "durability", "log-format", "log-level", "busy-timeout", "database-pool", "database-connect-timeout", "request-timeout", "idle-timeout",
                         "public-rate", "public-burst"] + adServicesSettingNames)
        if let unknown = object.members.first(where: { !known.contains($0.key) }) {
            throw CLIFailure.usage("\(path): unknown setting \"\(unknown.key)\"")
        }
        return Layer(
            name: path,
            lookup: { name in
                switch object[name] {
                case .string(let text): text
                case .number(let literal): literal
                case .bool(let flag): flag ? "true" : "false"
                default: nil
                }
            },
            list: { name in
                guard case .array(let items) = object[name] else { return nil }
                return items.compactMap(\.string)
            }
        )
    }

    /// Applies `layers` (highest precedence first) over the defaults.
    mutating func apply(_ layers: [Layer]) throws(CLIFailure) {
        func value(_ name: String) -> (String, String)? {
            for layer in layers { if let found = layer.lookup(name) { return (found, layer.name) } }
            return nil
        }
        func list(_ name: String) -> [String]? {
            for layer in layers { if let found = layer.list(name) { return found } }
            return nil
        }
        func parse<T>(_ name: String, _ convert: (String) -> T?) throws(CLIFailure) -> T? {
            guard let (text, source) = value(name) else { return nil }
            guard let converted = convert(text) else { throw CLIFailure.usage("\(source): invalid \(name) \"\(text)\"") }
            return converted
        }
        if let host = value("host")?.0 { self.host = host }
        if let port = try parse("port", { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) { self.port = port }
        if let (database, source) = value("database") {
            do { _ = try DatabaseLocation(database) } catch { throw CLIFailure.usage("\(source): database \(error.message)") }
            self.database = database
        }
        if let pool = try parse("database-pool", { Int($0).flatMap { (1...1000).contains($0) ? $0 : nil } }) { databasePool = pool }
        if let timeout = try parse("database-connect-timeout", { Double($0).flatMap { $0 > 0 && $0 <= 600 ? $0 : nil } }) { databaseConnectTimeout = timeout }
        if let limit = try parse("body-limit", { Int($0).flatMap { $0 > 0 ? $0 : nil } }) { bodyLimit = limit }
        if let allow = try parse("allow-development", { ["true": true, "1": true, "false": false, "0": false][$0.lowercased()] }) { allowDevelopment = allow }
        if let directory = value("keys-dir")?.0 { keysDirectory = directory }
        if let keys = list("keys") { extraKeys += keys }
        if let networks = list("accept-ad-network") { acceptedAdNetworks += networks }
        if let durability = try parse("durability", Durability.init(rawValue:)) { self.durability = durability }
        if let format = try parse("log-format", LogFormat.init(rawValue:)) { logFormat = format }
        if let level = try parse("log-level", { ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains($0) ? $0 : nil }) { logLevel = level }
        if let timeout = try parse("busy-timeout", { Double($0).flatMap { $0 >= 0 ? $0 : nil } }) { busyTimeout = timeout }
        if let timeout = try parse("request-timeout", { Double($0).flatMap { $0 > 0 && $0 <= 3600 ? $0 : nil } }) { requestTimeout = timeout }
        if let timeout = try parse("idle-timeout", { Double($0).flatMap { $0 > 0 && $0 <= 3600 ? $0 : nil } }) { idleTimeout = timeout }
        if let url = try parse("adservices-url", { $0.hasPrefix("https://") || $0.hasPrefix("http://") ? $0 : nil }) { adServicesURL = url }
        if let rate = try parse("public-rate", { Double($0).flatMap { $0 > 0 ? $0 : nil } }) { publicRate = rate }
        if let burst = try parse("public-burst", { Double($0).flatMap { $0 >= 1 ? $0 : nil } }) { publicBurst = burst }
        if let queue = try parse("adservices-max-queue", { Int($0).flatMap { $0 > 0 ? $0 : nil } }) { adServicesMaximumQueue = queue }
        if let concurrency = try parse("adservices-concurrency", { Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }) {
            adServicesConcurrency = concurrency
        }
        for (name, path) in Self.adServicesDurations {
            if let seconds = try parse(name, { Double($0).flatMap { $0 > 0 ? $0 : nil } }) { adServicesPolicy[keyPath: path] = seconds }
        }
    }

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

    /// Every AdServices setting name.
    static var adServicesSettingNames: [String] { ["adservices-url", "adservices-concurrency", "adservices-max-queue"] + adServicesDurations.map(\.0) }
}
