import Foundation
import JWS
import Postback

extension PostbackLedger {
    /// Re-applies the app's current schema to stored postbacks received at or after `from` (all when nil), in chunks;
    /// `progress(looked at, total)` is called after each chunk. Returns how many postbacks were decoded: a stored body
    /// that no longer parses, or a row without its receipt, is skipped and not counted.
    public func redecode(app: AppID, from: Date?, progress: @Sendable (Int, Int) -> Void) async throws -> Int {
        let fromText = from.map(Timestamp.format) ?? ""
        let filter = "advertised_item_id = ? AND received_at >= ? AND outcome IN ('verified', 'unverifiable')"
        let ids = try await engine.read { db in
            try db.rows("SELECT id FROM postbacks WHERE \(filter) ORDER BY id", [app, fromText]).map { try $0.get("id", as: Int64.self) }
        }
        let catalog = self.catalog
        var looked = 0, decoded = 0
        for chunk in stride(from: 0, to: ids.count, by: 1000).map({ Array(ids[$0..<min($0 + 1000, ids.count)]) }) {
            decoded += try await engine.write { db in
                try Self.decodeStored(chunk, db, schemas: catalog.refresh(db))
            }
            looked += chunk.count
            progress(looked, ids.count)
        }
        return decoded
    }

    /// Decodes up to `limit` of `app`'s stored postbacks that no schema has decoded yet, those with ids above `after`,
    /// oldest first, in one transaction; nothing when the app has no schema. Returns how many it looked at and
    /// decoded, and the last id it looked at, so a caller pages through the backlog: a row whose stored body no longer
    /// parses is passed over, not taken again for ever. On PostgreSQL rows another receiver is decoding are skipped.
    public func decodeWaiting(app: AppID, after: Int64, limit: Int) async throws -> (looked: Int, decoded: Int, last: Int64?) {
        let catalog = self.catalog
        return try await engine.write { db in
            let schemas = try catalog.refresh(db)
            guard schemas.entry(app: app) != nil else { return (0, 0, nil) }
            let lock = db.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
            let ids = try db.rows("""
                SELECT id FROM postbacks WHERE advertised_item_id = ? AND id > ? AND decode_status IS NULL AND outcome IN ('verified', 'unverifiable')
                ORDER BY id LIMIT ?\(lock)
                """, [app, after, limit]).map { try $0.get("id", as: Int64.self) }
            return (ids.count, try Self.decodeStored(ids, db, schemas: schemas), ids.last)
        }
    }

    /// What `serve` decodes a backlog with: 25 postbacks a transaction, at most a third of the writer (with 100,
    /// ingest's p99 was 193 ms during a backlog; with 25, 75 ms: docs/performance.md, `scripts/bench-background`).
    public static let backlogPace = WritePace(batch: 25, idleRatio: 2)

    /// Decodes all of `app`'s waiting postbacks (``decodeWaiting(app:after:limit:)``) at `pace`, and returns how many
    /// it decoded; stops between batches when the task is cancelled.
    public func decodeBacklog(app: AppID, pace: WritePace = backlogPace) async throws -> Int {
        var after: Int64 = 0
        var decoded = 0
        let clock = ContinuousClock()
        while true {
            try Task.checkCancellation()
            let started = clock.now
            let step = try await decodeWaiting(app: app, after: after, limit: pace.batch)
            guard let last = step.last else { return decoded }
            after = last
            decoded += step.decoded
            if pace.idleRatio > 0 { try await Task.sleep(for: (clock.now - started) * pace.idleRatio) }
        }
    }

    /// How many of `app`'s stored postbacks no schema has decoded yet.
    public func waitingForDecoding(app: AppID) async throws -> Int {
        try await engine.read { db in
            try db.value("SELECT count(*) FROM postbacks WHERE advertised_item_id = ? AND decode_status IS NULL AND outcome IN ('verified', 'unverifiable')",
                         [app], as: Int.self) ?? 0
        }
    }

    /// Decodes the stored postbacks `ids` with the catalogue's schemas; returns how many it decoded.
    private static func decodeStored(_ ids: [Int64], _ db: any SQLSession, schemas: SchemaCatalog.Snapshot) throws -> Int {
        let verifier = PostbackVerifier(keyRing: try KeyRing([]))
        var written = 0
        for id in ids {
            guard let row = try db.row("SELECT r.body, p.route, p.received_at FROM postbacks p JOIN receipts r ON r.id = p.receipt_id WHERE p.id = ?", [id]) else { continue }
            let body = try row.get("body", as: Data.self)
            let route = try Self.route(row)
            let receivedAt = try row.get("received_at", as: String.self)
            // The stored body was verified (or kept) at ingest; decoding only needs its fields back.
            guard let postback = verifier.verify(Array(body), expecting: route.expected).postback,
                  let time = Timestamp.parse(receivedAt) else { continue }
            try EventWriter.decode(db, rowID: id, postback: postback, receivedAt: time, schemas: schemas)
            written += 1
        }
        return written
    }
}
