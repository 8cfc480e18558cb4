import Postback

/// Whether each stored postback counts, kept in step with the rules in force. Ingest stores the policy's answer with
/// each postback; when the app registry or the server's accepted ad networks change, ``apply(_:)`` gives every stored
/// production-verified postback the answer the new rules give (``TrustPolicy/notCountedReason(app:adNetwork:)``), so
/// a change never loses a count, and undoing it restores the counts it took away. The report rollup follows through
/// the `postbacks` triggers.
public struct CountingRules: Sendable {
    let engine: any DatabaseEngine

    /// Applies `policy` to every stored production-verified postback; returns how many changed. One grouped read of
    /// (app, ad network, counted, reason), then one update per group whose answer changed, each in its own transaction,
    /// so the writer is never held for long.
    @discardableResult
    public func apply(_ policy: TrustPolicy) async throws -> Int {
        let groups = try await engine.read { db in
            try db.rows("""
                SELECT advertised_item_id, ad_network_id, countable, coalesce(reason, '') AS reason FROM postbacks
                WHERE outcome = 'verified' AND environment = 'production'
                GROUP BY advertised_item_id, ad_network_id, countable, coalesce(reason, '')
                """, []).map { row in
                (app: try row.get("advertised_item_id", as: AppID.self), adNetwork: try row.get("ad_network_id", as: String.self),
                 countable: try row.get("countable", as: Bool.self), reason: try row.get("reason", as: String.self))
            }
        }
        var changed = 0
        for group in groups {
            let reason = policy.notCountedReason(app: group.app, adNetwork: group.adNetwork)
            guard group.countable != (reason == nil) || group.reason != (reason?.rawValue ?? "") else { continue }
            changed += try await engine.write { db in
                try db.execute("""
                    UPDATE postbacks SET countable = ?, reason = ?
                    WHERE outcome = 'verified' AND environment = 'production' AND advertised_item_id = ? AND ad_network_id = ?
                        AND countable = ? AND coalesce(reason, '') = ?
                    """, [reason == nil, reason?.rawValue, group.app, group.adNetwork, group.countable, group.reason])
            }
        }
        return changed
    }
}
