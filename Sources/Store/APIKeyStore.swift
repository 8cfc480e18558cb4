import Foundation
import GRDB
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
    let pool: DatabasePool

    /// Creates a key named `name`; returns its record and the key text, which is not stored.
    public func create(name: String) async throws -> (record: APIKeyRecord, key: String) {
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let key = "cs_" + Base64.encode(bytes, alphabet: .url)
        let prefix = String(key.prefix(9))
        let createdAt = Timestamp.format(Date())
        let id = try await pool.write { db -> Int64 in
            try db.execute(sql: "INSERT INTO api_keys (name, prefix, key_hash, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [name, prefix, Data(sha256(Array(key.utf8))), createdAt])
            return db.lastInsertedRowID
        }
        return (APIKeyRecord(id: id, name: name, prefix: prefix, createdAt: createdAt, revokedAt: nil), key)
    }

    /// Every key, newest first.
    public func list() async throws -> [APIKeyRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, prefix, created_at, revoked_at FROM api_keys ORDER BY id DESC").map {
                APIKeyRecord(id: $0["id"], name: $0["name"], prefix: $0["prefix"], createdAt: $0["created_at"], revokedAt: $0["revoked_at"])
            }
        }
    }

    /// Revokes key `id`; false when there is no such active key.
    public func revoke(id: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [Timestamp.format(Date()), id])
            return db.changesCount > 0
        }
    }

    /// Whether `key` is a known, unrevoked key (compared by hash).
    public func isValid(_ key: String) async throws -> Bool {
        let hash = Data(sha256(Array(key.utf8)))
        return try await pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", arguments: [hash]) ?? false
        }
    }
}
