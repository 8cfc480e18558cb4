import Foundation
import JWS
import Postback
import Testing
@testable import Store
import TestSupport

/// Decoding at ingest (issue 28): the decode columns go into the row's INSERT and the events into one statement a
/// batch, computed ahead on the request's task. What it stores equals what `redecode` (the row-by-row path) writes
/// over the same rows, on both engines, and a decoding computed under a revision replaced since is done again.
@Suite struct DecodeAtIngestTests {
    /// The decode columns and events of every postback, without row ids.
    static func decoded(_ store: StoreDatabase) async throws -> [String] {
        let rows = try await store.rows("""
            SELECT p.dedup_key, p.decode_status, p.schema_revision, p.schema_version, p.revenue_min, p.revenue_max, p.currency, p.source_json,
                   p.event_count, e.event_index, e.name, e.count, e.revenue_min AS event_min, e.revenue_max AS event_max, e.currency AS event_currency, e.properties
            FROM postbacks p LEFT JOIN postback_events e ON e.postback_id = p.id ORDER BY p.dedup_key, e.event_index
            """)
        return rows.map { row in row.values.map { ReportTable.cell($0).serialized }.joined(separator: "|") }
    }

    @Test(arguments: TestEngine.allCases) func ingestStoresWhatRedecodeWrites(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        for (name, app) in [("shop", 10738027756 as AppID), ("game", 1108187390), ("subscription", 525463029)] {
            _ = try await store.schemas.put(app: app, document: try ExampleSchema.document(name))
        }
        let intakes = try EngineEqualityTests.traffic(count: 400)
        for start in stride(from: 0, to: intakes.count, by: 40) {
            _ = try store.ledger.persist(Array(intakes[start..<min(start + 40, intakes.count)]))
        }
        let atIngest = try await Self.decoded(store)
        #expect(atIngest.contains { $0.contains("\"decoded\"") } && atIngest.contains { $0.contains("\"purchase\"") || $0.contains("\"order\"") })
        for app: AppID in [10738027756, 1108187390, 525463029] { _ = try await store.ledger.redecode(app: app, from: nil) { _, _ in } }
        let redecoded = try await Self.decoded(store)
        #expect(atIngest.count == redecoded.count)
        for (left, right) in zip(atIngest, redecoded) where left != right { Issue.record("at ingest \(left)\nredecoded \(right)") }
    }

    @Test(arguments: TestEngine.allCases) func aDecodingOfAReplacedRevisionIsDoneAgain(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let shop = try ExampleSchema.document("shop")
        _ = try await store.schemas.put(app: 10738027756, document: shop)
        // The catalogue as a receiver holds it: loaded with the first commit.
        _ = try store.ledger.persist([])
        let intakes = try EngineEqualityTests.traffic(count: 200).map { intake in
            var ahead = intake
            ahead.decoding = ahead.currentDecoding(store.ledger.catalog.snapshot())
            return ahead
        }
        #expect(intakes.contains { $0.decoding?.revision == 1 })
        // Another receiver uploads revision 2 before the batch commits.
        _ = try await store.schemas.put(app: 10738027756, document: shop)
        _ = try store.ledger.persist(intakes)
        let revisions = try await store.rows("SELECT DISTINCT schema_revision FROM postbacks WHERE advertised_item_id = 10738027756 AND outcome = 'verified'")
        #expect(revisions.map { ReportTable.cell($0.values[0]).serialized } == ["2"])
        let events = try await store.rows("SELECT DISTINCT schema_revision FROM postback_events WHERE app = '10738027756'")
        #expect(events.map { ReportTable.cell($0.values[0]).serialized } == ["2"])
    }
}

/// The catalogue is read again only when the database's catalogue version moved, and a change made through another
/// receiver (a store of its own on the same database) moves it: the next batch decodes with the new revision.
@Suite struct CatalogueVersionTests {
    @Test(arguments: TestEngine.allCases) func aSchemaUploadedThroughAnotherReceiverIsUsedByTheNextBatch(engine: TestEngine) async throws {
        let database = try engine.freshDatabase()
        let receiver = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let other = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        defer { receiver.close(); other.close() }
        let traffic = try EngineEqualityTests.traffic(count: 600)
        let shopRows = "SELECT DISTINCT coalesce(schema_revision, 0) FROM postbacks WHERE advertised_item_id = 10738027756 AND outcome = 'verified' AND id > ?"
        // The receiver's catalogue is loaded, without a schema for the shop app.
        _ = try receiver.ledger.persist(Array(traffic[0..<200]))
        #expect(try await receiver.rows(shopRows, [0]).map { ReportTable.cell($0.values[0]).serialized } == ["0"])
        for expected in ["1", "2"] {
            let before = try #require(try await receiver.scalar("SELECT max(id) FROM postbacks", as: Int64.self))
            let receipts = try #require(try await receiver.scalar("SELECT count(*) FROM receipts", as: Int.self))
            _ = try await other.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
            let next = expected == "1" ? traffic[200..<400] : traffic[400..<600]
            _ = try receiver.ledger.persist(Array(next))
            #expect(try await receiver.rows(shopRows, [before]).map { ReportTable.cell($0.values[0]).serialized } == [expected])
            // A batch written again with the new catalogue is stored once.
            #expect(try await receiver.scalar("SELECT count(*) FROM receipts", as: Int.self) == receipts + 200)
        }
    }

    /// A batch that finds no version held (another batch found the catalogue changed and let it go) reads the catalogue
    /// again in a transaction of its own before it runs (``SchemaCatalog/forCommit(_:reloaded:)``), then decodes with it.
    @Test(arguments: TestEngine.allCases) func aBatchAfterTheCatalogueWasLetGoDecodesWithItReloaded(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        _ = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        _ = try store.ledger.persist([])
        let held = try #require(store.ledger.catalog.snapshot().version)
        #expect(throws: SchemaCatalog.Changed.self) { try store.ledger.catalog.confirm(expected: held, found: nil) }
        #expect(store.ledger.catalog.snapshot().version == nil)
        let traffic = try EngineEqualityTests.traffic(count: 200)
        #expect(try store.ledger.persist(traffic).count == traffic.count)
        #expect(store.ledger.catalog.snapshot().version == held)
        let revisions = try await store.rows("SELECT DISTINCT schema_revision FROM postbacks WHERE advertised_item_id = 10738027756 AND outcome = 'verified'")
        #expect(revisions.map { ReportTable.cell($0.values[0]).serialized } == ["1"])
    }
}

/// `redecode` says how many postbacks it decoded, not how many it looked at (issue 29, smaller defects).
@Suite struct RedecodeCountTests {
    @Test(arguments: TestEngine.allCases) func redecodeCountsOnlyWhatItDecoded(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        _ = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        _ = try store.ledger.persist(try EngineEqualityTests.traffic(count: 200))
        let stored = try #require(try await store.scalar("SELECT count(*) FROM postbacks WHERE advertised_item_id = 10738027756 AND outcome IN ('verified', 'unverifiable')", as: Int.self))
        // One stored body that no longer parses: redecode skips it.
        try await store.engine.write { db in
            try db.execute("UPDATE receipts SET body = ? WHERE id = (SELECT receipt_id FROM postbacks WHERE advertised_item_id = 10738027756 ORDER BY id LIMIT 1)", [Data("not json".utf8)])
        }
        let decoded = try await store.ledger.redecode(app: 10738027756, from: nil) { _, _ in }
        #expect(stored > 1 && decoded == stored - 1)
    }
}
