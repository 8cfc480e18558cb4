import Foundation
import JWS
import Postback

/// What an API key may do.
public enum APIScope: String, Sendable, CaseIterable, Comparable {
    /// Read reports, conversions, intake, postbacks, Apple Ads records and jobs, schemas and names.
    case read
    /// Upload schemas and set names (apps' schemas, campaign names, the ad-network registry).
    case schemas
    /// Everything, including what later administration routes add.
    case admin
    /// Read `/metrics` when the server protects it (`--metrics-require-key`).
    case metrics
    /// Read apps' published schemas (`GET /v1/schemas/{app}/published`) and nothing else: for app builds and the ad
    /// networks that bid on an advertiser's schema. `read` includes it.
    case encoder

    /// What `apikey create` grants unless told otherwise: reading and uploading schemas, not administration.
    public static let defaults: Set<APIScope> = [.read, .schemas]

    public static func < (left: APIScope, right: APIScope) -> Bool {
        (allCases.firstIndex(of: left) ?? 0) < (allCases.firstIndex(of: right) ?? 0)
    }
}

/// What a valid key allows: its scopes, and the apps it is limited to (nil: every app).
public struct APIKeyGrant: Sendable, Equatable {
    public let scopes: Set<APIScope>
    public let apps: Set<AppID>?
    /// The advertiser the key was made for: its apps are the advertiser's, as they are when the key is used.
    public var advertiser: String? = nil
    /// The key's name, which imports record as who made them.
    public var name: String? = nil
    /// The key's id (names need not be unique): what its heavy requests are counted against.
    public var id: Int64? = nil

    /// Whether the key has `scope` (admin has every scope, read includes encoder).
    public func allows(_ scope: APIScope) -> Bool {
        scopes.contains(.admin) || scopes.contains(scope) || (scope == .encoder && scopes.contains(.read))
    }

    /// Whether the key may see `app` (always, when it is limited to no apps).
    public func covers(app: AppID) -> Bool { apps?.contains(app) ?? true }
}

/// An API key as listed (the key itself is shown once, at creation, and stored only as a SHA-256 hash).
public struct APIKeyRecord: Sendable, Equatable {
    public let id: Int64
    public let name: String
    /// The first characters of the key, so people can tell keys apart.
    public let prefix: String
    public let createdAt: String
    public let revokedAt: String?
    /// What the key may do.
    public let grant: APIKeyGrant
}

/// API keys for the private routes, stored only as SHA-256 hashes.
public struct APIKeyStore: Sendable {
    let engine: any DatabaseEngine

    /// The scopes an advertiser's key may have: admin and metrics span every app.
    public static let advertiserScopes: Set<APIScope> = [.read, .schemas, .encoder]

    /// Why a key was not made.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// No advertiser has the name.
        case unknownAdvertiser(String)
        /// An advertiser's key asked for a scope that spans every app.
        case scopeSpansEveryApp(APIScope)

        public var description: String {
            switch self {
            case .unknownAdvertiser(let name): "no advertiser is named \(name); add it with countersign advertiser set \(name) --app ID"
            case .scopeSpansEveryApp(let scope): "an advertiser's key cannot have the \(scope.rawValue) scope, which spans every app; use read, schemas or encoder"
            }
        }
    }

    /// Creates a key named `name` with `scopes`, limited to `apps` when given, or made for `advertiser` (covering its
    /// apps as they are when the key is used); returns its record and the key text, which is not stored.
    public func create(name: String, scopes: Set<APIScope> = APIScope.defaults, apps: Set<AppID>? = nil,
                       advertiser: String? = nil) async throws -> (record: APIKeyRecord, key: String) {
        if advertiser != nil, let wide = scopes.subtracting(Self.advertiserScopes).sorted().first { throw Refusal.scopeSpansEveryApp(wide) }
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let key = "cs_" + Base64.encode(bytes, alphabet: .url)
        let prefix = String(key.prefix(9))
        let createdAt = Timestamp.format(Date())
        // An advertiser's key is stored covering no app of its own, so a reader that ignores `advertiser` fails closed.
        let (scopeText, appText) = Self.columns(APIKeyGrant(scopes: scopes, apps: advertiser == nil ? apps : []))
        let (id, grant) = try await engine.write { db -> (Int64, APIKeyGrant) in
            var grant = APIKeyGrant(scopes: scopes, apps: apps)
            if let advertiser {
                // Locked (PostgreSQL), so a removal running at once revokes this key or finds it refused.
                guard try db.row("SELECT name FROM advertisers WHERE name = ?\(db.dialect == .postgres ? " FOR UPDATE" : "")", [advertiser]) != nil else {
                    throw Refusal.unknownAdvertiser(advertiser)
                }
                grant = APIKeyGrant(scopes: scopes, apps: try Self.advertiserApps(db, advertiser), advertiser: advertiser)
            }
            let id = try db.value("INSERT INTO api_keys (name, prefix, key_hash, created_at, scopes, apps, advertiser) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                                  [name, prefix, Data(sha256(Array(key.utf8))), createdAt, scopeText, appText, advertiser], as: Int64.self) ?? 0
            return (id, grant)
        }
        return (APIKeyRecord(id: id, name: name, prefix: prefix, createdAt: createdAt, revokedAt: nil, grant: grant), key)
    }

    /// The apps the advertiser `name` owns now (none, once it is removed).
    static func advertiserApps(_ db: any SQLSession, _ name: String) throws -> Set<AppID> {
        Set(try db.rows("SELECT app FROM advertiser_apps WHERE advertiser = ?", [name]).map { AppID(try $0.get("app", as: Int64.self)) })
    }

    /// The `scopes` and `apps` columns: comma-separated, in a fixed order; `apps` NULL for every app.
    static func columns(_ grant: APIKeyGrant) -> (scopes: String, apps: String?) {
        (grant.scopes.sorted().map(\.rawValue).joined(separator: ","), grant.apps.map { $0.sorted().map(String.init).joined(separator: ",") })
    }

    /// The grant stored in a key's `scopes` and `apps` columns (unknown scope names are ignored).
    static func grant(scopes: String, apps: String?) -> APIKeyGrant {
        APIKeyGrant(scopes: Set(scopes.split(separator: ",").compactMap { APIScope(rawValue: String($0)) }),
                    apps: apps.map { Set($0.split(separator: ",").compactMap { AppID(String($0)) }) })
    }

    /// The grant of a key's row (`scopes`, `apps`, `advertiser`): an advertiser's key covers the advertiser's apps now.
    static func grant(_ db: any SQLSession, row: SQLRow) throws -> APIKeyGrant {
        let stored = grant(scopes: try row.get("scopes"), apps: try row.get("apps"))
        guard let advertiser = try row.get("advertiser", as: String?.self) else { return stored }
        return APIKeyGrant(scopes: stored.scopes, apps: try advertiserApps(db, advertiser), advertiser: advertiser)
    }

    /// Every key, newest first.
    public func list() async throws -> [APIKeyRecord] {
        try await engine.read { db in
            try db.rows("SELECT id, name, prefix, created_at, revoked_at, scopes, apps, advertiser FROM api_keys ORDER BY id DESC", []).map {
                APIKeyRecord(id: try $0.get("id"), name: try $0.get("name"), prefix: try $0.get("prefix"), createdAt: try $0.get("created_at"),
                             revokedAt: try $0.get("revoked_at"), grant: try Self.grant(db, row: $0))
            }
        }
    }

    /// Revokes key `id`; false when there is no such active key.
    public func revoke(id: Int64) async throws -> Bool {
        let now = Timestamp.format(Date())
        return try await engine.write { db in
            try db.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [now, id]) > 0
        }
    }

    /// What `key` allows, if it is a known, unrevoked key (compared by hash); nil otherwise.
    public func grant(for key: String) async throws -> APIKeyGrant? {
        let hash = Data(sha256(Array(key.utf8)))
        return try await engine.read { db in
            try db.row("SELECT id, name, scopes, apps, advertiser FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", [hash]).map {
                var grant = try Self.grant(db, row: $0)
                grant.name = try $0.get("name")
                grant.id = try $0.get("id")
                return grant
            }
        }
    }
}
