import Foundation
import JWS
import Postback

/// What is kept for a while and then deleted: the receipts of rejected requests (invalid, badly signed or refused),
/// and postbacks nobody could verify (unknown key or version, or found forged by `reverify`) with their receipts.
/// Counted postbacks, verified ones and their copies are never touched.
public struct Retention: Sendable {
    let engine: any DatabaseEngine

    /// Deletes the receipts of rejected requests received before `cutoff`, at most `limit` of them; returns how many.
    public func pruneRejected(receivedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await engine.write { db in
            try db.execute("""
                DELETE FROM receipts WHERE id IN (
                    SELECT id FROM receipts WHERE disposition <> 'stored' AND disposition = 'rejected' AND received_at < ? ORDER BY id LIMIT ?)
                """, [Timestamp.format(cutoff), limit])
        }
    }

    /// Deletes postbacks that were never verified (unverifiable, or found invalid by `reverify`) received before
    /// `cutoff`, at most `limit` of them, with their receipts, the receipts of their copies and their decoded events;
    /// returns how many postbacks. The report rollup follows through the `postbacks` triggers.
    public func pruneUnverifiable(receivedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await engine.write { db in
            let rows = try db.rows("""
                SELECT id, receipt_id FROM postbacks WHERE outcome IN ('unverifiable', 'invalid') AND received_at < ? ORDER BY id LIMIT ?
                """, [Timestamp.format(cutoff), limit])
            guard !rows.isEmpty else { return 0 }
            let ids = try rows.map { try $0.get("id", as: Int64.self) }
            let receipts = try rows.map { try $0.get("receipt_id", as: Int64.self) }
            let list = Array(repeating: "?", count: ids.count).joined(separator: ", ")
            try db.execute("DELETE FROM postback_events WHERE postback_id IN (\(list))", ids)
            try db.execute("DELETE FROM receipts WHERE postback_id IN (\(list))", ids)
            try db.execute("DELETE FROM receipts WHERE id IN (\(list))", receipts)
            return try db.execute("DELETE FROM postbacks WHERE id IN (\(list))", ids)
        }
    }
}
