import Foundation
import JWS
import Postback

/// An API key as listed (the key itself is shown once, at creation, and stored only as a SHA-256 hash).
public struct APIKeyRecord: Sendable, Equatable {
    public let id: Int64
    public let name: String
    /// The first characters of the key, so people can tell keys apart.
    public let prefix: String
    public let createdAt: String
    public let revokedAt: String?
}

/// API keys for the private routes, stored only as SHA-256 hashes.
public struct APIKeyStore: Sendable {
    let engine: any DatabaseEngine

    /// Creates a key named `name`; returns its record and the key text, which is not stored.
    public func create(name: String) async throws -> (record: APIKeyRecord, key: String) {
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let key = "cs_" + Base64.encode(bytes, alphabet: .url)
        let prefix = String(key.prefix(9))
        let createdAt = Timestamp.format(Date())
        let id = try await engine.write { db -> Int64 in
            try db.value("INSERT INTO api_keys (name, prefix, key_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id",
                         [name, prefix, Data(sha256(Array(key.utf8))), createdAt], as: Int64.self) ?? 0
        }
        return (APIKeyRecord(id: id, name: name, prefix: prefix, createdAt: createdAt, revokedAt: nil), key)
    }

    /// Every key, newest first.
    public func list() async throws -> [APIKeyRecord] {
        try await engine.read { db in
            try db.rows("SELECT id, name, prefix, created_at, revoked_at FROM api_keys ORDER BY id DESC", []).map {
                APIKeyRecord(id: try $0.get("id"), name: try $0.get("name"), prefix: try $0.get("prefix"), createdAt: try $0.get("created_at"),
                             revokedAt: try $0.get("revoked_at"))
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

    /// Whether `key` is a known, unrevoked key (compared by hash).
    public func isValid(_ key: String) async throws -> Bool {
        let hash = Data(sha256(Array(key.utf8)))
        return try await engine.read { db in
            try db.value("SELECT 1 FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", [hash], as: Bool.self) ?? false
        }
    }
}
