import Foundation
import JWS
import Postback

/// The apps an installation serves, each with its own policy. With no app registered every app is served, as before
/// the registry existed; once one is, postbacks of other apps are stored but never counted (`app_not_registered`).
public struct AppRegistry: Sendable {
    let engine: any DatabaseEngine

    /// One registered app.
    public struct Entry: Sendable, Equatable {
        public var app: AppID
        public var name: String
        /// Ad network ids accepted for the app; empty accepts those the server accepts.
        public var adNetworks: [String]
        /// Whether the app's development postbacks are accepted (never counted) whatever the server's setting.
        public var allowDevelopment: Bool
        /// The currency the app's revenue is in (ISO 4217); a schema in another currency is refused.
        public var currency: String?
        /// The IANA time zone of the app's report days when a report names the app and no zone.
        public var timeZone: String?
        /// The registrable domain the app's Info.plist names for developer copies (`example.com`), so copies arriving
        /// there are told from a network's postbacks (docs/setup.md).
        public var copyDomain: String?
        /// Whether the app's published schema (the encoder's form) is readable without a key.
        public var publicSchema: Bool
        public var updatedAt: String

        public init(app: AppID, name: String, adNetworks: [String] = [], allowDevelopment: Bool = false, currency: String? = nil,
                    timeZone: String? = nil, copyDomain: String? = nil, publicSchema: Bool = false, updatedAt: String = "") {
            self.app = app
            self.name = name
            self.adNetworks = adNetworks
            self.allowDevelopment = allowDevelopment
            self.currency = currency
            self.timeZone = timeZone
            self.copyDomain = copyDomain
            self.publicSchema = publicSchema
            self.updatedAt = updatedAt
        }

        /// The entry as JSON, as the CLI and the API show it.
        public var json: JSONObject {
            JSONObject([
                JSONMember(key: "app", value: .number(String(app))), JSONMember(key: "name", value: .string(name)),
                JSONMember(key: "ad_networks", value: .array(adNetworks.map { .string($0) })),
                JSONMember(key: "allow_development", value: .bool(allowDevelopment)),
                JSONMember(key: "currency", value: currency.map { .string($0) } ?? .null),
                JSONMember(key: "time_zone", value: timeZone.map { .string($0) } ?? .null),
                JSONMember(key: "copy_domain", value: copyDomain.map { .string($0) } ?? .null),
                JSONMember(key: "public_schema", value: .bool(publicSchema)),
                JSONMember(key: "updated_at", value: .string(updatedAt)),
            ])
        }
    }

    /// Why an entry was refused.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let field: String
        public let message: String
        public var description: String { "\(field): \(message)" }
    }

    /// Checks an entry's fields: a name, ad network ids without commas, an ISO 4217 currency, an IANA time zone.
    public static func check(_ entry: Entry) throws(Problem) {
        guard !entry.name.isEmpty, entry.name.unicodeScalars.count <= 200, !LabelText.hasRefused(entry.name) else {
            throw Problem(field: "name", message: "must be 1 to 200 characters without \(LabelText.refusedKinds)")
        }
        for network in entry.adNetworks where !isAdNetworkID(network) {
            throw Problem(field: "ad_networks", message: "each must be an ad network id such as example123.skadnetwork")
        }
        guard entry.app.number >= 1 else { throw Problem(field: "app", message: "must be an App Store id, a positive integer") }
        if let currency = entry.currency, !CurrencyCode.isKnown(currency) {
            throw Problem(field: "currency", message: "must be an ISO 4217 currency code in upper case, such as USD or EUR")
        }
        if let zone = entry.timeZone, ReportTimeZone(identifier: zone) == nil {
            throw Problem(field: "time_zone", message: "must be an IANA time zone name such as Europe/Berlin")
        }
        if let domain = entry.copyDomain, !Self.isDomain(domain) {
            throw Problem(field: "copy_domain", message: "must be a domain name in lower case such as example.com, without https:// or a path")
        }
    }

    /// Adds or replaces `entry`.
    public func set(_ entry: Entry) async throws {
        try Self.check(entry)
        let now = Timestamp.format(Date())
        try await engine.write { db in
            _ = try db.execute("""
                INSERT INTO apps (app, name, ad_networks, allow_development, currency, time_zone, copy_domain, public_schema, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (app) DO UPDATE SET name = excluded.name, ad_networks = excluded.ad_networks,
                    allow_development = excluded.allow_development, currency = excluded.currency, time_zone = excluded.time_zone,
                    copy_domain = excluded.copy_domain, public_schema = excluded.public_schema, updated_at = excluded.updated_at
                """, [entry.app, entry.name, entry.adNetworks.isEmpty ? nil : entry.adNetworks.joined(separator: ","), entry.allowDevelopment,
                      entry.currency, entry.timeZone, entry.copyDomain, entry.publicSchema, now])
            if let zone = entry.timeZone { try TimeZoneOffsets.ensure(db, zone: zone) }
        }
    }

    /// Removes `app`; false when it was not registered.
    public func remove(app: AppID) async throws -> Bool {
        try await engine.write { db in try db.execute("DELETE FROM apps WHERE app = ?", [app]) > 0 }
    }

    /// Every registered app, by id.
    public func list() async throws -> [Entry] {
        try await engine.read { db in
            try db.rows("SELECT app, name, ad_networks, allow_development, currency, time_zone, copy_domain, public_schema, updated_at FROM apps ORDER BY app", []).map { row in
                Entry(app: try row.get("app"), name: try row.get("name"),
                      adNetworks: (try row.get("ad_networks", as: String?.self))?.split(separator: ",").map(String.init) ?? [],
                      allowDevelopment: try row.get("allow_development", as: Bool.self), currency: try row.get("currency"),
                      timeZone: try row.get("time_zone"), copyDomain: try row.get("copy_domain"), publicSchema: try row.get("public_schema", as: Bool.self),
                      updatedAt: try row.get("updated_at"))
            }
        }
    }

    /// The registry's rules for the trust policy: nil when no app is registered (every app counts as before).
    public func rules() async throws -> [AppID: TrustPolicy.AppRule]? {
        try Self.rules(try await engine.read { db in try db.rows("SELECT app, ad_networks, allow_development FROM apps", []) })
    }

    private static func rules(_ rows: [SQLRow]) throws -> [AppID: TrustPolicy.AppRule]? {
        guard !rows.isEmpty else { return nil }
        return Dictionary(uniqueKeysWithValues: try rows.map { row in
            (try row.get("app", as: AppID.self), TrustPolicy.AppRule(
                acceptedAdNetworks: Set((try row.get("ad_networks", as: String?.self))?.split(separator: ",").map(String.init) ?? []),
                allowDevelopment: try row.get("allow_development", as: Bool.self)))
        })
    }

    /// The copy domain of each registered app that has one.
    public func copyDomains() async throws -> [AppID: String] {
        try await engine.read { db in try Self.copyDomains(db) }
    }

    private static func copyDomains(_ db: any SQLSession) throws -> [AppID: String] {
        Dictionary(uniqueKeysWithValues: try db.rows("SELECT app, copy_domain FROM apps WHERE copy_domain IS NOT NULL", []).map { row in
            (try row.get("app", as: AppID.self), try row.get("copy_domain", as: String.self))
        })
    }

    /// Whether `text` is a domain name as a copy domain is written: lower-case labels of letters, digits and hyphens,
    /// at least two, at most 253 characters.
    static func isDomain(_ text: String) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return text.utf8.count <= 253 && labels.count >= 2 && labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.utf8.first != UInt8(ascii: "-") && label.utf8.last != UInt8(ascii: "-")
                && label.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
        }
    }

    /// Whether `app`'s published schema is readable without a key.
    public func hasPublicSchema(app: AppID) async throws -> Bool {
        try await engine.read { db in try db.value("SELECT public_schema FROM apps WHERE app = ?", [app], as: Bool.self) } ?? false
    }

    /// The registered time zone of `app`, if any.
    public func timeZone(app: AppID) async throws -> String? {
        try await engine.read { db in try db.value("SELECT time_zone FROM apps WHERE app = ?", [app], as: String.self) }
    }

    /// Whether Countersign knows `app` at all: registered, or named by a stored postback or an imported spend row.
    public func isKnown(_ app: AppID) async throws -> Bool {
        try await engine.read { db in
            try db.row("SELECT 1 FROM apps WHERE app = ?", [app]) != nil
                || db.row("SELECT 1 FROM postbacks WHERE advertised_item_id = ? LIMIT 1", [app]) != nil
                || db.row("SELECT 1 FROM spend WHERE app = ? LIMIT 1", [app]) != nil
        }
    }
}
