import Foundation
import JWS
import Postback

/// The advertisers a network serves: each a name and the apps it owns (an app belongs to one advertiser at most). A key
/// made for an advertiser covers its apps as they are when the key is used; its forwarding rules are the rules limited
/// to one of its apps (docs/operations.md#advertisers).
public struct AdvertiserRegistry: Sendable {
    let engine: any DatabaseEngine

    /// The most advertisers, and apps per advertiser, an installation holds.
    public static let maximumAdvertisers = 10_000
    public static let maximumApps = 1_000

    /// One advertiser, with its apps, the keys made for it and the rules that forward its apps' postbacks.
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let apps: [AppID]
        /// Its keys, active and revoked (never the keys themselves).
        public let keys: [APIKeyRecord]
        /// The forwarding rules limited to one of its apps.
        public let rules: [String]
        public let updatedAt: String

        /// The entry as JSON, as the CLI and the API show it.
        public var json: JSONObject {
            JSONObject([
                JSONMember(key: "name", value: .string(name)),
                JSONMember(key: "apps", value: .array(apps.map { .number(String($0)) })),
                JSONMember(key: "keys", value: .array(keys.map { key in
                    .object(JSONObject([
                        JSONMember(key: "id", value: .number(String(key.id))), JSONMember(key: "name", value: .string(key.name)),
                        JSONMember(key: "prefix", value: .string(key.prefix)),
                        JSONMember(key: "scopes", value: .array(key.grant.scopes.sorted().map { .string($0.rawValue) })),
                        JSONMember(key: "revoked_at", value: key.revokedAt.map { .string($0) } ?? .null),
                    ]))
                })),
                JSONMember(key: "forwarding_rules", value: .array(rules.map { .string($0) })),
                JSONMember(key: "updated_at", value: .string(updatedAt)),
            ])
        }
    }

    /// Why a change was refused.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The name is not 1 to 64 of `a-z 0-9 . _ -`.
        case badName(String)
        /// Apps the request names that belong to another advertiser.
        case appsTaken(app: AppID, advertiser: String)
        /// More than ``maximumApps`` apps, or the installation already holds ``maximumAdvertisers``.
        case tooMany(String)

        public var description: String {
            switch self {
            case .badName(let name): "name \(name.debugDescription): must be 1 to 64 characters of a-z, 0-9, '.', '_' and '-', such as acme-games"
            case .appsTaken(let app, let advertiser): "app \(app) belongs to advertiser \(advertiser); take it from there first"
            case .tooMany(let what): what
            }
        }
    }

    /// Whether `text` can name an advertiser (as rules and templates are named).
    public static func isName(_ text: String) -> Bool { DeliveryTemplate.isName(text) }

    /// Adds the advertiser `name`, or replaces its apps with `apps`. Its keys cover the new apps from their next request.
    @discardableResult
    public func set(name: String, apps: Set<AppID>) async throws -> Entry {
        guard Self.isName(name) else { throw Refusal.badName(name) }
        guard apps.count <= Self.maximumApps else { throw Refusal.tooMany("apps: an advertiser has at most \(Self.maximumApps) apps") }
        let now = Timestamp.format(Date())
        try await engine.write { db in
            for app in apps.sorted() {
                if let owner = try db.value("SELECT advertiser FROM advertiser_apps WHERE app = ?", [app.number], as: String.self), owner != name {
                    throw Refusal.appsTaken(app: app, advertiser: owner)
                }
            }
            let exists = try db.value("SELECT count(*) FROM advertisers WHERE name = ?", [name], as: Int.self) ?? 0 > 0
            if !exists, try db.value("SELECT count(*) FROM advertisers", [], as: Int.self) ?? 0 >= Self.maximumAdvertisers {
                throw Refusal.tooMany("an installation holds at most \(Self.maximumAdvertisers) advertisers")
            }
            try db.execute("""
                INSERT INTO advertisers (name, updated_at) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at
                """, [name, now])
            try db.execute("DELETE FROM advertiser_apps WHERE advertiser = ?", [name])
            for app in apps.sorted() {
                // Another advertiser's PUT may have taken the app since it was checked (PostgreSQL runs them at once).
                guard try db.execute("INSERT INTO advertiser_apps (app, advertiser) VALUES (?, ?) ON CONFLICT (app) DO NOTHING", [app.number, name]) > 0 else {
                    throw Refusal.appsTaken(app: app, advertiser: try db.value("SELECT advertiser FROM advertiser_apps WHERE app = ?", [app.number], as: String.self) ?? "another")
                }
            }
        }
        guard let entry = try await named(name) else { throw Refusal.badName(name) }
        return entry
    }

    /// Removes the advertiser `name` and revokes its keys, in one transaction; false when there is none. Its apps'
    /// postbacks, names and rules stay.
    public func remove(_ name: String) async throws -> Bool {
        let now = Timestamp.format(Date())
        return try await engine.write { db in
            guard try db.execute("DELETE FROM advertisers WHERE name = ?", [name]) > 0 else { return false }
            try db.execute("DELETE FROM advertiser_apps WHERE advertiser = ?", [name])
            try db.execute("UPDATE api_keys SET revoked_at = ? WHERE advertiser = ? AND revoked_at IS NULL", [now, name])
            return true
        }
    }

    /// The advertiser `name`, or nil.
    public func named(_ name: String) async throws -> Entry? {
        try await engine.read { db in try Self.entries(db, name: name).first }
    }

    /// Every advertiser, by name.
    public func all() async throws -> [Entry] {
        try await engine.read { db in try Self.entries(db, name: nil) }
    }

    /// The advertisers (one, when `name` is given) in the caller's session.
    static func entries(_ db: any SQLSession, name: String?) throws -> [Entry] {
        let filter = name == nil ? "" : " WHERE name = ?"
        let arguments: [any SQLValueConvertible] = name.map { [$0] } ?? []
        let advertisers = try db.rows("SELECT name, updated_at FROM advertisers\(filter) ORDER BY name", arguments)
        var apps: [String: [AppID]] = [:]
        for row in try db.rows("SELECT advertiser, app FROM advertiser_apps\(name == nil ? "" : " WHERE advertiser = ?") ORDER BY app", arguments) {
            apps[try row.get("advertiser"), default: []].append(AppID(try row.get("app", as: Int64.self)))
        }
        var keys: [String: [APIKeyRecord]] = [:]
        for row in try db.rows("SELECT id, name, prefix, created_at, revoked_at, scopes, advertiser FROM api_keys WHERE advertiser IS NOT NULL\(name == nil ? "" : " AND advertiser = ?") ORDER BY id",
                               arguments) {
            let owner: String = try row.get("advertiser")
            keys[owner, default: []].append(APIKeyRecord(
                id: try row.get("id"), name: try row.get("name"), prefix: try row.get("prefix"), createdAt: try row.get("created_at"),
                revokedAt: try row.get("revoked_at"), grant: APIKeyGrant(scopes: APIKeyStore.grant(scopes: try row.get("scopes"), apps: nil).scopes,
                                                                       apps: Set(apps[owner] ?? []), advertiser: owner)))
        }
        var rules: [Int64: [String]] = [:]
        for row in try db.rows("SELECT name, app FROM forward_rules WHERE app IS NOT NULL ORDER BY name", []) {
            rules[try row.get("app", as: Int64.self), default: []].append(try row.get("name"))
        }
        return try advertisers.map { row in
            let name: String = try row.get("name")
            let owned = apps[name] ?? []
            return Entry(name: name, apps: owned, keys: keys[name] ?? [], rules: owned.flatMap { rules[$0.number] ?? [] }.sorted(),
                         updatedAt: try row.get("updated_at"))
        }
    }
}
