import Foundation
import JWS

/// One stored postback and every copy of it received: what a lookup by postback identifier or transaction id answers.
public struct PostbackHistory: Sendable {
    /// The stored row: dedup key, protocol, outcome, reason, key id, environment, countable, counts of copies, decoding.
    public let postback: JSONObject
    /// Receipts of this postback, oldest first: the copy it was stored from, and a page of its duplicates, replays and
    /// unverified copies.
    public let copies: [Copy]
    /// Receipts of this postback in all (the stored copy and every kept copy).
    public let copiesTotal: Int64
    /// The cursor for the next page of copies, when one follows.
    public let nextCopiesAfter: Int64?
    /// The decoded events, in order.
    public let events: [JSONObject]

    /// One body received for this postback.
    public struct Copy: Sendable {
        /// Receipt id, time, route, remote address, outcome, reason and disposition.
        public let receipt: JSONObject
        /// The body exactly as received.
        public let body: [UInt8]
        /// Whether this is the copy the stored row was taken from.
        public let isStored: Bool
    }

    static let postbackColumns = [
        "id", "dedup_key", "protocol", "version", "outcome", "reason", "key_id", "environment", "countable", "received_at",
        "postback_identifier", "ad_network_id", "advertised_item_id", "conversion_window", "duplicates", "replays",
        "unverified_copies", "decode_status", "schema_revision", "schema_version", "revenue_min", "revenue_max", "currency",
        "event_count", "receipt_id",
    ]
}

extension PostbackLedger {
    /// The most postbacks one identifier finds: AAK's one and SKAN's three windows, in each of the three spellings.
    static let maximumHistories = 12

    /// The stored postbacks whose AAK `postback-identifier` or SKAN `transaction-id` is `identifier` (in the case given,
    /// lower or upper case): one for AAK, up to one per conversion window for SKAN. Found by the dedup key's index.
    /// Each has the copy it was stored from and at most `copies` other copies with receipt ids after `copiesAfter`,
    /// oldest first; ``PostbackHistory/copiesTotal`` says how many there are in all.
    public func history(identifier: String, copiesAfter: Int64 = 0, copies limit: Int = 100) async throws -> [PostbackHistory] {
        let spellings = Array(Set([identifier, identifier.lowercased(), identifier.uppercased()])).sorted()
        let keys = spellings.flatMap { spelling in ["aak:" + spelling] + (0...2).map { "skan:\(spelling):\($0)" } }
        let placeholders = Array(repeating: "?", count: keys.count).joined(separator: ", ")
        return try await engine.read { db in
            let rows = try db.rows("SELECT \(PostbackHistory.postbackColumns.joined(separator: ", ")) FROM postbacks WHERE dedup_key IN (\(placeholders)) ORDER BY id",
                                   keys, reuse: .once)
            return try rows.prefix(Self.maximumHistories).map { row in
                let id = try row.get("id", as: Int64.self)
                let receiptID = try row.get("receipt_id", as: Int64.self)
                var postback = JSONObject()
                for (column, value) in zip(row.columns, row.values) { postback.set(column, ReportTable.cell(value)) }
                let columns = "id, received_at, route, remote_address, outcome, reason, disposition, body"
                // One row past the page tells whether another page follows.
                var page = try db.rows("SELECT \(columns) FROM receipts WHERE postback_id = ? AND id > ? ORDER BY id LIMIT ?",
                                       [id, copiesAfter, limit + 1], reuse: .once)
                let more = page.count > limit
                page = Array(page.prefix(limit))
                let stored = try db.rows("SELECT \(columns) FROM receipts WHERE id = ?", [receiptID], reuse: .once)
                let copies = try (stored + page).sorted { try $0.get("id", as: Int64.self) < $1.get("id", as: Int64.self) }.map { copy in
                    var receipt = JSONObject()
                    for (column, value) in zip(copy.columns, copy.values) where column != "body" { receipt.set(column, ReportTable.cell(value)) }
                    let copyID = try copy.get("id", as: Int64.self)
                    return PostbackHistory.Copy(receipt: receipt, body: [UInt8](try copy.get("body", as: Data.self)), isStored: copyID == receiptID)
                }
                let nextCopiesAfter = more ? try page.last?.get("id", as: Int64.self) : nil
                let total = try db.value("SELECT count(*) FROM receipts WHERE postback_id = ?", [id], as: Int64.self) ?? 0
                let events = try db.rows("""
                    SELECT event_index, name, count, revenue_min, revenue_max, currency, schema_revision, properties
                    FROM postback_events WHERE postback_id = ? ORDER BY event_index
                    """, [id], reuse: .once).map { event in
                    var object = JSONObject()
                    for (column, value) in zip(event.columns, event.values) { object.set(column, ReportTable.cell(value)) }
                    return object
                }
                return PostbackHistory(postback: postback, copies: copies, copiesTotal: total + 1, nextCopiesAfter: nextCopiesAfter, events: events)
            }
        }
    }
}
