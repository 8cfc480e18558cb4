import Foundation
import JWS
import Postback

/// How long the bodies of rejected requests (invalid, badly signed or refused) are kept. Their receipts stay, so the
/// intake report still counts them; stored postbacks, their copies and every counted row are never touched.
public struct RejectedBodyRetention: Sendable {
    let engine: any DatabaseEngine

    /// Empties the bodies of rejected receipts received before `cutoff`, at most `limit` of them; returns how many.
    public func prune(receivedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await engine.write { db in
            try db.execute("""
                UPDATE receipts SET body = ? WHERE id IN (
                    SELECT id FROM receipts WHERE disposition <> 'stored' AND disposition = 'rejected' AND received_at < ? AND length(body) > 0
                    ORDER BY id LIMIT ?)
                """, [Data(), Timestamp.format(cutoff), limit])
        }
    }
}
