import ConversionSchema
import Foundation
import GRDB
import JWS
import Postback
import Synchronization

/// The current schema of each app, held in memory for decoding at ingest and kept in step with the `schemas` table.
public final class SchemaCatalog: Sendable {
    /// A stored schema revision.
    public struct Entry: Sendable {
        /// Increases with every upload for the app.
        public let revision: Int
        /// The checked schema.
        public let schema: ConversionSchema
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// An empty catalog.
    public init() {}

    /// The current schema for `app`.
    public func entry(app: String) -> Entry? { entries.withLock { $0[app] } }

    func set(_ entry: Entry, app: String) { entries.withLock { $0[app] = entry } }

    /// Loads the latest revision of every app's schema.
    func load(_ db: Database) throws {
        let rows = try Row.fetchAll(db, sql: """
            SELECT app, revision, document FROM schemas s
            WHERE revision = (SELECT max(revision) FROM schemas WHERE app = s.app)
            """)
        for row in rows {
            let document: String = row["document"]
            if let schema = SchemaReader.check(Array(document.utf8)).schema {
                set(Entry(revision: row["revision"], schema: schema), app: row["app"])
            }
        }
    }
}

/// Decoding a stored postback into `postback_events`, shared by ingest and `redecode`.
enum EventWriter {
    /// Replaces the events of postback `rowID` with what the app's current schema says, or marks it undecoded.
    /// A row just inserted has no events and no decode columns yet, so clearing them is skipped.
    static func decode(_ db: Database, rowID: Int64, postback: Postback, receivedAt: Date, catalog: SchemaCatalog, isNewRow: Bool = false) throws {
        let app = String(postback.advertisedItemID)
        let entry = catalog.entry(app: app)
        if isNewRow, entry == nil { return }
        if !isNewRow { try db.cachedStatement(sql: "DELETE FROM postback_events WHERE postback_id = ?").execute(arguments: [rowID]) }
        guard let entry else {
            try db.execute(sql: "UPDATE postbacks SET decode_status = NULL, schema_revision = NULL, schema_version = NULL, revenue_min = NULL, revenue_max = NULL, currency = NULL, source_json = NULL, event_count = 0 WHERE id = ?", arguments: [rowID])
            return
        }
        switch SchemaDecoder.decode(entry.schema, postback: postback, receivedAt: receivedAt) {
        case .failure(let failure):
            try db.execute(sql: "UPDATE postbacks SET decode_status = ?, schema_revision = ?, schema_version = NULL, revenue_min = NULL, revenue_max = NULL, currency = NULL, source_json = NULL, event_count = 0 WHERE id = ?",
                           arguments: [failure.rawValue, entry.revision, rowID])
        case .success(let decoded):
            for (index, event) in decoded.events.enumerated() {
                let properties = event.properties.isEmpty && decoded.properties.isEmpty ? nil
                    : JSONValue.object(JSONObject(decoded.properties.merging(event.properties) { $1 }.sorted { $0.key < $1.key }
                        .map { JSONMember(key: $0.key, value: .string($0.value)) })).serialized
                try db.cachedStatement(sql: """
                    INSERT INTO postback_events (postback_id, app, schema_revision, schema_version, event_index, name, count, revenue_min, revenue_max, currency, properties)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [rowID, app, entry.revision, decoded.schemaVersion, index, event.name, event.count,
                                     event.revenue?.min, event.revenue?.max, event.revenue?.currency, properties])
            }
            let source = decoded.source.isEmpty ? nil : Explanation.sourceLevels(decoded.source).serialized
            try db.cachedStatement(sql: "UPDATE postbacks SET decode_status = 'decoded', schema_revision = ?, schema_version = ?, revenue_min = ?, revenue_max = ?, currency = ?, source_json = ?, event_count = ? WHERE id = ?")
                .execute(arguments: [entry.revision, decoded.schemaVersion, decoded.revenue?.min, decoded.revenue?.max, decoded.revenue?.currency, source,
                                     decoded.events.reduce(0) { $0 + ($1.count ?? 1) }, rowID])
        }
    }
}

/// Outcome of storing a schema upload.
public enum SchemaUpload: Sendable {
    /// Stored as `revision`; `decoded` postbacks that had no schema were decoded now.
    case stored(revision: Int, warnings: [SchemaDiagnostic], decoded: Int)
    /// Refused: the static checks found errors.
    case invalid([SchemaDiagnostic])
}
