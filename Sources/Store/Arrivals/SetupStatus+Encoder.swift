import Foundation
import Postback

extension SetupStatus {
    /// What the counted install postbacks received since `since` (a UTC day) say about `app`'s encoder, or every
    /// visible app's. Read from the postbacks by the app index; the period is the one `apps status` asks for.
    public func encoder(app: AppID?, since: Date, visible: @Sendable (AppID) -> Bool = { _ in true }) async throws -> EncoderHealth {
        let day = String(Timestamp.format(since).prefix(10))
        let (rows, revisions) = try await engine.read { db in
            var conditions = ["received_at >= ?", "countable = 1", "conversion_class = 'install'"]
            var arguments: [any SQLValueConvertible] = [day]
            if let app { conditions.append("advertised_item_id = ?"); arguments.append(app) }
            let rows = try db.rows("""
                SELECT advertised_item_id AS app, substr(received_at, 1, 10) AS day, conversion_window, tier_min, conversion_value, coarse_value,
                       coalesce(decode_status, '') AS status, count(*) AS postbacks
                FROM postbacks WHERE \(conditions.joined(separator: " AND "))
                GROUP BY advertised_item_id, substr(received_at, 1, 10), conversion_window, tier_min, conversion_value, coarse_value, coalesce(decode_status, '')
                """, arguments)
            let revisions = try db.rows("SELECT app, revision, substr(uploaded_at, 1, 10) AS day FROM schemas WHERE uploaded_at >= ?", [day])
            return (rows, revisions)
        }
        let groups = try rows.compactMap { row -> EncoderHealth.Group? in
            let id = try row.get("app", as: AppID.self)
            guard visible(id) else { return nil }
            return EncoderHealth.Group(app: id, day: try row.get("day"), window: try row.get("conversion_window", as: Int?.self) ?? 0,
                                       tier: try row.get("tier_min"), fine: try row.get("conversion_value", as: Int?.self),
                                       coarse: try row.get("coarse_value", as: String?.self), status: try row.get("status"), postbacks: try row.get("postbacks"))
        }
        let uploads = try revisions.compactMap { row -> (app: AppID, revision: Int, day: String)? in
            guard let id = AppID(try row.get("app", as: String.self)), visible(id), app == nil || app == id else { return nil }
            return (id, try row.get("revision", as: Int.self), try row.get("day", as: String.self))
        }
        return EncoderHealth(groups: groups, revisions: uploads)
    }
}
