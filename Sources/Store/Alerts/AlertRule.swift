import Foundation
import JWS
import Postback

/// One alert rule: what to watch (``AlertKind``, its filters and limits) and the webhook that is told when it starts
/// and stops firing (or, for a digest, once a day).
public struct AlertRule: Sendable, Equatable {
    /// How the webhook's body is written.
    public enum Format: String, Sendable, CaseIterable {
        /// A JSON object with the rule, the state, a sentence and the figures (docs/alerts.md).
        case json
        /// `{"text": ...}`, which a Slack (or Mattermost, or Teams workflow) incoming webhook posts as a message.
        case slack
    }

    /// The rule's name: 1 to 64 of `a-z 0-9 . _ -`.
    public var name: String
    /// What it watches.
    public var kind: AlertKind
    /// Where alerts are POSTed: an absolute http or https URL. It often holds the sink's secret (a Slack webhook's
    /// does), so answers show only its scheme and host (``shownURL``).
    public var url: String
    public var format: Format
    /// Only this app (kinds that take filters).
    public var app: AppID?
    /// Only this ad network (kinds that take filters).
    public var adNetwork: String?
    /// Only this forwarding rule's dead letters (`dead_letters`).
    public var partner: String?
    /// The window looked at, in hours (`silence`, `untrusted_share`, `null_share`, `value_mix`).
    public var hours: Double?
    /// The share (0 to 1) or count that fires the rule.
    public var threshold: Double?
    /// The fewest arrivals, installs or claims a share is judged on.
    public var minimum: Int
    /// A digest's hour (0-23).
    public var hour: Int
    /// A digest's zone: of its hour and of yesterday.
    public var timeZone: String
    /// The currency a digest's amounts are converted into (each in its own when nil).
    public var currency: String?
    /// When the rule was last set (ISO 8601 UTC); empty before it is stored.
    public var updatedAt: String

    /// Rules at most: each is checked every round.
    public static let maximumRules = 100
    /// Undelivered alerts (pending and dead) a rule holds at most; beyond it new ones are counted as dropped.
    public static let maximumEntries = 1000
    /// How long an alert is retried before it is a dead letter: two days, after which it is news no longer.
    public static let maximumAge: TimeInterval = 2 * 86_400
    /// How long one delivery may take.
    public static let timeout: TimeInterval = 10
    /// The fewest a share is judged on, unless a rule says otherwise.
    public static let defaultMinimum = 20
    /// A digest's hour, unless a rule says otherwise.
    public static let defaultHour = 8

    /// Creates a rule; the defaults are the documented ones.
    public init(name: String, kind: AlertKind, url: String, format: Format = .json, app: AppID? = nil, adNetwork: String? = nil,
                partner: String? = nil, hours: Double? = nil, threshold: Double? = nil, minimum: Int = AlertRule.defaultMinimum, hour: Int = AlertRule.defaultHour,
                timeZone: String = "UTC", currency: String? = nil, updatedAt: String = "") {
        self.name = name
        self.kind = kind
        self.url = url
        self.format = format
        self.app = app
        self.adNetwork = adNetwork
        self.partner = partner
        self.hours = hours ?? kind.defaultHours
        self.threshold = threshold ?? kind.defaultThreshold
        self.minimum = minimum
        self.hour = hour
        self.timeZone = timeZone
        self.currency = currency
        self.updatedAt = updatedAt
    }

    /// Why a rule was refused: the field (as the API names it) and what it must be.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let field: String
        public let message: String
        public var description: String { "\(field): \(message)" }
    }

    /// Checks every field's shape and range, and that the kind reads every field given.
    public static func check(_ rule: AlertRule) throws(Problem) {
        let nameCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789._-")
        guard (1...64).contains(rule.name.count), rule.name.allSatisfy(nameCharacters.contains) else {
            throw Problem(field: "name", message: "must be 1 to 64 characters of a-z, 0-9, '.', '_' and '-', such as installs-stopped")
        }
        guard ForwardRule.isWebhookURL(rule.url) else {
            throw Problem(field: "url", message: "must be an absolute http or https URL of printable ASCII, with a port from 1 to 65535 if any, without credentials or fragment, such as https://hooks.slack.com/services/...")
        }
        if !rule.kind.takesFilters, rule.app != nil || rule.adNetwork != nil {
            throw Problem(field: rule.app != nil ? "app" : "ad_network", message: "\(rule.kind.rawValue) watches every app and network; leave it out")
        }
        if let network = rule.adNetwork, !isAdNetworkID(network) {
            throw Problem(field: "ad_network", message: "must be a lowercase ad network id such as example123.skadnetwork")
        }
        if let app = rule.app, app.number <= 0 { throw Problem(field: "app", message: "must be an App Store id, a positive integer") }
        if rule.partner != nil, rule.kind != .deadLetters { throw Problem(field: "partner", message: "only dead_letters reads a forwarding rule's name") }
        if let partner = rule.partner, !((1...64).contains(partner.count) && partner.allSatisfy(nameCharacters.contains)) {
            throw Problem(field: "partner", message: "must be a forwarding rule's name")
        }
        if rule.kind.defaultHours == nil, rule.hours != nil {
            throw Problem(field: "hours", message: "\(rule.kind.rawValue) has no window; leave it out")
        }
        if rule.kind.defaultHours != nil {
            let most: Double = rule.kind == .valueMix ? 72 : 720
            guard let hours = rule.hours, hours.isFinite, hours >= 0.01, hours <= most else {
                throw Problem(field: "hours", message: "must be 0.01 to \(Int(most)) hours" + (rule.kind == .valueMix ? " (the mix before is of 7 times as long)" : " (30 days)"))
            }
        }
        if rule.kind.defaultThreshold != nil, rule.threshold == nil {
            throw Problem(field: "threshold", message: "\(rule.kind.rawValue) needs a threshold")
        }
        if rule.minimum != defaultMinimum, !rule.kind.usesMinimum {
            throw Problem(field: "minimum", message: "\(rule.kind.rawValue) judges no share; leave it out")
        }
        if rule.kind != .digest, rule.hour != defaultHour || rule.timeZone != "UTC" || rule.currency != nil {
            let field = rule.hour != defaultHour ? "hour" : rule.timeZone != "UTC" ? "time_zone" : "currency"
            throw Problem(field: field, message: "only a digest reads it; leave it out")
        }
        if let threshold = rule.threshold {
            guard rule.kind.defaultThreshold != nil else { throw Problem(field: "threshold", message: "\(rule.kind.rawValue) has no threshold; leave it out") }
            if rule.kind.thresholdIsShare {
                guard threshold.isFinite, threshold > 0, threshold <= 1 else { throw Problem(field: "threshold", message: "must be a share above 0 and at most 1, such as 0.05") }
            } else {
                guard threshold.isFinite, threshold >= 1, threshold <= 1e9, threshold == threshold.rounded() else {
                    throw Problem(field: "threshold", message: "must be a whole count from 1, such as 1")
                }
            }
        }
        guard (1...1_000_000).contains(rule.minimum) else { throw Problem(field: "minimum", message: "must be 1 to 1000000") }
        guard (0...23).contains(rule.hour) else { throw Problem(field: "hour", message: "must be an hour of the day, 0 to 23") }
        guard ReportTimeZone(identifier: rule.timeZone) != nil else {
            throw Problem(field: "time_zone", message: "must be an IANA zone such as Europe/Berlin, or UTC")
        }
        if let currency = rule.currency, !CurrencyCode.isKnown(currency) {
            throw Problem(field: "currency", message: "must be an ISO 4217 code such as USD")
        }
    }

    /// Whether `other` judges the same condition: the same kind, filters, window, threshold and minimum (the webhook,
    /// its format and a digest's hour, zone and currency aside).
    func judgedAlike(_ other: AlertRule) -> Bool {
        kind == other.kind && app == other.app && adNetwork == other.adNetwork && partner == other.partner && hours == other.hours
            && threshold == other.threshold && minimum == other.minimum
    }

    /// The URL as answers show it: its scheme, host and port, since the rest often holds the sink's secret.
    public var shownURL: String { Self.shown(url) }

    /// `url` as answers show a webhook: its scheme, host and port, then `/...`.
    static func shown(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return "(hidden)" }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")/..."
    }

    /// The rule as JSON, as the CLI and the API show it (the URL shortened to ``shownURL``).
    public var json: JSONObject {
        func number(_ value: Double?) -> JSONValue {
            guard let value else { return .null }
            return .number(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value))
        }
        return JSONObject([
            JSONMember(key: "name", value: .string(name)),
            JSONMember(key: "kind", value: .string(kind.rawValue)),
            JSONMember(key: "url", value: .string(shownURL)),
            JSONMember(key: "format", value: .string(format.rawValue)),
            JSONMember(key: "app", value: app.map { .number(String($0)) } ?? .null),
            JSONMember(key: "ad_network", value: adNetwork.map { .string($0) } ?? .null),
            JSONMember(key: "partner", value: partner.map { .string($0) } ?? .null),
            JSONMember(key: "hours", value: number(hours)),
            JSONMember(key: "threshold", value: number(threshold)),
            JSONMember(key: "minimum", value: .number(String(minimum))),
            JSONMember(key: "hour", value: .number(String(hour))),
            JSONMember(key: "time_zone", value: .string(timeZone)),
            JSONMember(key: "currency", value: currency.map { .string($0) } ?? .null),
            JSONMember(key: "updated_at", value: .string(updatedAt)),
        ])
    }

    /// The fields a JSON body may set (`PUT /v1/alerts/rules/{name}`).
    public static let jsonFields = ["kind", "url", "format", "app", "ad_network", "partner", "hours", "threshold", "minimum", "hour", "time_zone", "currency"]

    /// The rule `name` a JSON body describes: `kind` and `url` required, the rest as ``jsonFields`` names them, null or
    /// absent for the default. Checked as ``check(_:)`` checks.
    public init(name: String, json object: JSONObject) throws(Problem) {
        for member in object.members where !Self.jsonFields.contains(member.key) {
            throw Problem(field: member.key, message: "unknown field; a rule has \(Self.jsonFields.joined(separator: ", "))")
        }
        func present(_ key: String) -> JSONValue? {
            guard let value = object[key], value != .null else { return nil }
            return value
        }
        func text(_ key: String) throws(Problem) -> String? {
            guard let value = present(key) else { return nil }
            guard let text = value.string else { throw Problem(field: key, message: "must be text") }
            return text
        }
        func number(_ key: String) throws(Problem) -> Double? {
            guard let value = present(key) else { return nil }
            guard case .number(let text) = value, let number = Double(text) else { throw Problem(field: key, message: "must be a number") }
            return number
        }
        func whole(_ key: String) throws(Problem) -> Int? {
            guard let value = try number(key) else { return nil }
            guard value == value.rounded(), abs(value) < 1e12 else { throw Problem(field: key, message: "must be a whole number") }
            return Int(value)
        }
        guard let kindName = try text("kind") else { throw Problem(field: "kind", message: "required: one of \(AlertKind.allCases.map(\.rawValue).joined(separator: ", "))") }
        guard let kind = AlertKind(rawValue: kindName) else { throw Problem(field: "kind", message: "must be one of \(AlertKind.allCases.map(\.rawValue).joined(separator: ", "))") }
        guard let url = try text("url") else { throw Problem(field: "url", message: "required: the webhook's URL") }
        var format = Format.json
        if let name = try text("format") {
            guard let value = Format(rawValue: name) else { throw Problem(field: "format", message: "must be json or slack") }
            format = value
        }
        self.init(name: name, kind: kind, url: url, format: format, adNetwork: try text("ad_network"), partner: try text("partner"),
                  hours: try number("hours"), threshold: try number("threshold"), minimum: try whole("minimum") ?? Self.defaultMinimum,
                  hour: try whole("hour") ?? Self.defaultHour,
                  timeZone: try text("time_zone") ?? "UTC", currency: try text("currency"))
        if let app = try whole("app") { self.app = AppID(Int64(app)) }
        try Self.check(self)
    }
}
