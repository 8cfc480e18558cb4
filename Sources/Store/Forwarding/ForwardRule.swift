import Foundation
import JWS
import Postback

/// One forwarding rule: the partner URL that receives every stored, verified postback matching its filters, with the
/// pace the partner can take. A filter left nil matches every value.
public struct ForwardRule: Sendable, Equatable {
    /// Which signing environments a rule forwards.
    public enum Environment: String, Sendable, CaseIterable {
        /// Postbacks signed with Apple's production keys (the default).
        case production
        /// Postbacks signed with Apple's development keys (accepted only where development is allowed; never counted).
        case development
        /// Both.
        case any
    }

    /// The rule's name, the partner as metrics, status and the CLI name it: 1 to 64 of `a-z 0-9 . _ -`.
    public var name: String
    /// Where each postback is POSTed: an absolute `http` or `https` URL.
    public var url: String
    /// Only this ad network id.
    public var adNetwork: String?
    /// Only this app (App Store id).
    public var app: AppID?
    /// Only this protocol.
    public var postbackProtocol: PostbackProtocol?
    /// Which environments.
    public var environment: Environment
    /// Deliveries in flight to the partner at most, across every receiver.
    public var concurrency: Int
    /// Deliveries started a second at most, across every receiver (bursts of up to one second's worth).
    public var rate: Double
    /// How long a postback is retried, from when it was stored, before it becomes a dead letter.
    public var maximumAge: TimeInterval
    /// How long one delivery may take.
    public var timeout: TimeInterval
    /// Outbox entries (pending and dead) the rule may hold; while it holds that many, new postbacks are not queued for
    /// it (``ForwardingOutbox/backfill(partner:since:now:)`` queues them once it has room).
    public var maximumEntries: Int
    /// The delivery template its bodies are made with (``DeliveryTemplate``; `original` by default).
    public var template: String
    /// The header that carries the partner's secret (such as `Authorization`), when the rule sends one; its value is
    /// never part of the rule (``ForwardingOutbox/set(_:header:maximumRules:)``).
    public var header: String?
    /// When the rule was last set (ISO 8601 UTC); empty before it is stored.
    public var updatedAt: String

    /// Nine days, as long as Apple's own devices retry a postback.
    public static let defaultMaximumAge: TimeInterval = 9 * 86_400
    /// Rules at most unless the operator says otherwise: each rule costs every verified postback an outbox row.
    public static let defaultMaximumRules = 20
    /// The most deliveries a rule may have in flight.
    public static let maximumConcurrency = 256
    /// A million entries: nine days of a partner down at more than one postback a second, about 100 MB of outbox.
    public static let defaultMaximumEntries = 1_000_000

    /// Creates a rule; the defaults are the documented ones.
    public init(name: String, url: String, adNetwork: String? = nil, app: AppID? = nil, postbackProtocol: PostbackProtocol? = nil,
                environment: Environment = .production, concurrency: Int = 4, rate: Double = 50,
                maximumAge: TimeInterval = ForwardRule.defaultMaximumAge, timeout: TimeInterval = 10,
                maximumEntries: Int = ForwardRule.defaultMaximumEntries, template: String = DeliveryTemplate.original, header: String? = nil,
                updatedAt: String = "") {
        self.name = name
        self.url = url
        self.adNetwork = adNetwork
        self.app = app
        self.postbackProtocol = postbackProtocol
        self.environment = environment
        self.concurrency = concurrency
        self.rate = rate
        self.maximumAge = maximumAge
        self.timeout = timeout
        self.maximumEntries = maximumEntries
        self.template = template
        self.header = header
        self.updatedAt = updatedAt
    }

    /// Why a rule was refused: the field (as the API names it) and what it must be.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let field: String
        public let message: String
        public var description: String { "\(field): \(message)" }
    }

    /// Checks every field's shape and range.
    public static func check(_ rule: ForwardRule) throws(Problem) {
        let nameCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789._-")
        guard (1...64).contains(rule.name.count), rule.name.allSatisfy(nameCharacters.contains) else {
            throw Problem(field: "name", message: "must be 1 to 64 characters of a-z, 0-9, '.', '_' and '-', such as acme-mmp")
        }
        guard isWebhookURL(rule.url) else {
            throw Problem(field: "url", message: "must be an absolute http or https URL of printable ASCII, with a port from 1 to 65535 if any, without credentials or fragment, such as https://partner.example/postbacks")
        }
        if let network = rule.adNetwork, !isAdNetworkID(network) {
            throw Problem(field: "ad_network", message: "must be a lowercase ad network id such as example123.skadnetwork")
        }
        if let app = rule.app, app.number <= 0 { throw Problem(field: "app", message: "must be an App Store id, a positive integer") }
        guard (1...maximumConcurrency).contains(rule.concurrency) else {
            throw Problem(field: "concurrency", message: "must be 1 to \(maximumConcurrency) deliveries in flight")
        }
        guard rule.rate.isFinite, rule.rate >= 0.01, rule.rate <= 10_000 else {
            throw Problem(field: "rate", message: "must be 0.01 to 10000 deliveries a second")
        }
        guard rule.maximumAge.isFinite, rule.maximumAge >= 1, rule.maximumAge <= 90 * 86_400 else {
            throw Problem(field: "max_age", message: "must be 1 second to 90 days, in seconds (default 777600, nine days)")
        }
        guard rule.timeout.isFinite, rule.timeout >= 0.1, rule.timeout <= 300 else {
            throw Problem(field: "timeout", message: "must be 0.1 to 300 seconds")
        }
        guard (1000...100_000_000).contains(rule.maximumEntries) else {
            throw Problem(field: "max_entries", message: "must be 1000 to 100000000 outbox entries (default 1000000)")
        }
        guard DeliveryTemplate.isName(rule.template) else {
            throw Problem(field: "template", message: "must name a delivery template, such as original or enriched (countersign forward templates lists them)")
        }
    }

    /// Whether `url` is one Countersign POSTs to: printable ASCII only (no space, CR, LF or NUL: the URL goes into a
    /// request line), a known scheme, a host, a port within 1 to 65535 when given, no credentials or fragment.
    public static func isWebhookURL(_ url: String) -> Bool {
        guard url.utf8.count <= 2000, url.utf8.allSatisfy({ (0x21...0x7E).contains($0) }), let components = URLComponents(string: url),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty, components.user == nil, components.password == nil, components.fragment == nil else { return false }
        return portIsValid(url, components)
    }

    /// The URL's host is a DNS name (letters, digits, `-` and `.`), an IPv4 address or a bracketed IPv6 address (one
    /// `inet_pton` reads), never
    /// percent-encoded; its port, when it names one, is 1 to 65535 written without leading zeros.
    private static func portIsValid(_ url: String, _ components: URLComponents) -> Bool {
        let authority = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).dropFirst(2).first ?? ""
        let (host, port): (Substring, Substring?)
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return false }
            port = rest.isEmpty ? nil : rest.dropFirst()
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(host), &address) == 1 else { return false }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            port = parts.count > 1 ? parts[1] : nil
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            guard !host.isEmpty, host.utf8.count <= 253, labels.allSatisfy({ label in
                (1...63).contains(label.count) && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
                    && !label.hasPrefix("-") && !label.hasSuffix("-")
            }) else { return false }
        }
        guard let port else { return true }
        guard let number = Int(port), (1...65535).contains(number), String(number) == port else { return false }
        return components.port == number
    }

    /// The rule as JSON, as the CLI and the API show it.
    public var json: JSONObject {
        func number(_ value: Double) -> JSONValue {
            .number(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value))
        }
        return JSONObject([
            JSONMember(key: "name", value: .string(name)),
            JSONMember(key: "url", value: .string(url)),
            JSONMember(key: "ad_network", value: adNetwork.map { .string($0) } ?? .null),
            JSONMember(key: "app", value: app.map { .number(String($0)) } ?? .null),
            JSONMember(key: "protocol", value: postbackProtocol.map { .string($0.rawValue) } ?? .null),
            JSONMember(key: "environment", value: .string(environment.rawValue)),
            JSONMember(key: "concurrency", value: .number(String(concurrency))),
            JSONMember(key: "rate", value: number(rate)),
            JSONMember(key: "max_age", value: number(maximumAge)),
            JSONMember(key: "timeout", value: number(timeout)),
            JSONMember(key: "max_entries", value: .number(String(maximumEntries))),
            JSONMember(key: "template", value: .string(template)),
            JSONMember(key: "header", value: header.map { .string($0) } ?? .null),
            JSONMember(key: "updated_at", value: .string(updatedAt)),
        ])
    }
}
