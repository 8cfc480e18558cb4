import Foundation
import Postback

extension PostbackLedger {
    /// Re-checks every unverifiable postback with `check` and records what it finds now.
    public func reverify(_ check: @escaping @Sendable (_ route: IntakeRoute, _ body: [UInt8]) -> (VerificationResult, PolicyDecision)) async throws -> ReverifySummary {
        let rows = try await engine.read { db in
            try db.rows("SELECT p.id, p.route, r.body, p.received_at, p.receipt_id FROM postbacks p JOIN receipts r ON r.id = p.receipt_id WHERE p.outcome = 'unverifiable' ORDER BY p.id", [])
        }
        var summary = ReverifySummary()
        for row in rows {
            summary.checked += 1
            let id = try row.get("id", as: Int64.self)
            let route = try Self.route(row)
            let body = try row.get("body", as: Data.self)
            let receivedAt = try row.get("received_at", as: String.self)
            let (result, decision) = check(route, Array(body))
            switch result {
            case .verified(let postback, _):
                let receiptID = try row.get("receipt_id", as: Int64.self)
                let updated = PostbackRow(postback: postback, intake: (route, result, decision), receivedAt: receivedAt, reason: nil)
                try await engine.write { db in
                    try updated.update(db, id: id, receiptID: receiptID)
                    try ForwardingOutbox.enqueue(db, postbackID: id, now: Date())
                }
                summary.promoted += 1
            case .unverifiable:
                summary.stillUnverifiable += 1
            case .invalid(let problem, _):
                let reason = problem.reason.rawValue
                try await engine.write { db in
                    try db.execute("UPDATE postbacks SET outcome = 'invalid', reason = ?, countable = 0 WHERE id = ? AND outcome = 'unverifiable'", [reason, id])
                }
                summary.nowInvalid += 1
            }
        }
        return summary
    }
}

/// Counts from one `reverify` pass.
public struct ReverifySummary: Sendable, Equatable {
    /// Unverifiable rows examined.
    public var checked = 0
    /// Rows that now verify and were promoted.
    public var promoted = 0
    /// Rows still unverifiable.
    public var stillUnverifiable = 0
    /// Rows that a now-known key shows to be forged or malformed (kept, marked invalid, never counted).
    public var nowInvalid = 0

    /// An empty summary.
    public init() {}
}
