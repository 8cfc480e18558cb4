import Foundation
import Testing
@testable import Store
import TestSupport

/// Reports on PostgreSQL read the same way whatever the planner's statistics say.
@Suite struct ReportPlanTests {
    /// Found after `countersign copy` of 2,000,000 rows into a fresh PostgreSQL: the copy listed every row in
    /// `rollup_pending` and the fold removed them, the statistics still described a large pending list, and the live
    /// view scanned every postback to probe it (0.71 s against 0.014 s once analysed). The pending rows are found by
    /// their ids whatever the statistics say.
    @Test func theLiveRollupNeverScansThePostbacksWhenTheStatisticsAreStale() throws {
        let store = try TestEngine.postgres.freshStore()
        defer { store.close() }
        try store.engine.transaction { db in
            // Statistics as a copy leaves them before anything analyses: none at all, and no autovacuum to gather them.
            try db.execute("ALTER TABLE postbacks SET (autovacuum_enabled = false)")
            try db.execute("ALTER TABLE rollup_pending SET (autovacuum_enabled = false)")
            try db.execute("""
                INSERT INTO postbacks (dedup_key, protocol, outcome, countable, received_at, postback_identifier, ad_network_id,
                    advertised_item_id, conversion_type, did_win, conversion_window, tier_min, tier_max, signed_json, unsigned_json,
                    receipt_id, route, content_hash)
                SELECT 'aak:plan-' || i, 'aak', 'verified', 1, '2026-10-' || lpad(CAST(1 + i % 28 AS text), 2, '0') || 'T00:00:00Z',
                    'plan-' || i, 'example.adattributionkit', 1108187390, 'download', 1, 0, 2, 3, '{}', '{}', 0, 'any', '\\x00'
                FROM generate_series(1, 20000) AS i
                """)
            try db.execute("INSERT INTO rollup_pending (id) SELECT id FROM postbacks")
        }
        // The fold empties the pending list (its rows are not needed for the plan).
        _ = try store.engine.transaction { db in try db.execute("DELETE FROM rollup_pending") }
        let plan = try store.engine.snapshot { db in
            try db.rows("EXPLAIN SELECT day, app, sum(postbacks) FROM conversion_rollup_live WHERE day >= '2026-10-05' GROUP BY day, app", [], reuse: .once)
                .map { try $0.get(at: 0, as: String.self) }.joined(separator: "\n")
        }
        #expect(!plan.contains("Seq Scan on postbacks"), "\(plan)")
        #expect(plan.contains("postbacks_pkey"), "\(plan)")
    }
}
