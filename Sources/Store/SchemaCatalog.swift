import ConversionSchema
import Foundation
import JWS
import Postback
import Synchronization

/// The current schema of each app, held in memory for decoding at ingest and kept in step with the `schemas` table.
///
/// Several receivers may share one database, so the catalogue does not trust its own memory: ``refresh(_:)`` compares
/// each app's latest revision in the database with the one held and loads what changed. Ingest refreshes once per
/// commit, inside the commit's transaction.
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

    /// Loads every app whose latest revision differs from the one held. Every commit runs it, so its query is prepared.
    ///
    /// On PostgreSQL it reads through `schema_catalogue()`, which holds a shared lock until the transaction ends: a
    /// schema upload (``SchemaRegistry/put(app:document:)``) takes it exclusively, so it waits for the batches of every
    /// receiver that are decoding with the catalogue as it was, and decodes their postbacks after them. SQLite has one
    /// writer, so its batches and uploads never overlap.
    func refresh(_ session: any SQLSession) throws {
        let sql = switch session.dialect {
        case .sqlite: "SELECT app, max(revision) AS revision FROM schemas GROUP BY app"
        case .postgres: "SELECT app, revision FROM schema_catalogue()"
        }
        let latest = try session.rows(sql, [], reuse: .prepared)
        let held = entries.withLock { $0.mapValues(\.revision) }
        for row in latest {
            let app = try row.get("app", as: String.self)
            let revision = try row.get("revision", as: Int.self)
            guard held[app] != revision else { continue }
            let document = try session.value("SELECT document FROM schemas WHERE app = ? AND revision = ?", [app, revision], as: String.self) ?? ""
            if let schema = SchemaReader.check(Array(document.utf8)).schema {
                entries.withLock { $0[app] = Entry(revision: revision, schema: schema) }
            }
        }
    }
}

/// Decoding a stored postback into `postback_events`, shared by ingest and `redecode`.
enum EventWriter {
    /// Replaces the events of postback `rowID` with what the app's current schema says, or marks it undecoded.
    /// A row just inserted has no events and no decode columns yet, so clearing them is skipped.
    static func decode(_ db: any SQLSession, rowID: Int64, postback: Postback, receivedAt: Date, catalog: SchemaCatalog, isNewRow: Bool = false) throws {
        let app = String(postback.advertisedItemID)
        let entry = catalog.entry(app: app)
        if isNewRow, entry == nil { return }
        if !isNewRow { try db.execute("DELETE FROM postback_events WHERE postback_id = ?", [rowID]) }
        guard let entry else {
            try db.execute("UPDATE postbacks SET decode_status = NULL, schema_revision = NULL, schema_version = NULL, revenue_min = NULL, revenue_max = NULL, currency = NULL, source_json = NULL, event_count = 0 WHERE id = ?", [rowID])
            return
        }
        switch SchemaDecoder.decode(entry.schema, postback: postback, receivedAt: receivedAt) {
        case .failure(let failure):
            try db.execute("UPDATE postbacks SET decode_status = ?, schema_revision = ?, schema_version = NULL, revenue_min = NULL, revenue_max = NULL, currency = NULL, source_json = NULL, event_count = 0 WHERE id = ?",
                           [failure.rawValue, entry.revision, rowID])
        case .success(let decoded):
            for (index, event) in decoded.events.enumerated() {
                let properties = event.properties.isEmpty && decoded.properties.isEmpty ? nil
                    : JSONValue.object(JSONObject(decoded.properties.merging(event.properties) { $1 }.sorted { $0.key < $1.key }
                        .map { JSONMember(key: $0.key, value: .string($0.value)) })).serialized
                try db.execute("""
                    INSERT INTO postback_events (postback_id, app, schema_revision, schema_version, event_index, name, count, revenue_min, revenue_max, currency, properties)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [rowID, app, entry.revision, decoded.schemaVersion, index, event.name, event.count,
                          event.revenue?.min, event.revenue?.max, event.revenue?.currency, properties])
            }
            let source = decoded.source.isEmpty ? nil : Explanation.sourceLevels(decoded.source).serialized
            // A value the schema defines as no event is `no_event`, told apart from one it leaves undefined.
            let status = decoded.events.isEmpty && decoded.defined ? "no_event" : "decoded"
            try db.execute("UPDATE postbacks SET decode_status = ?, schema_revision = ?, schema_version = ?, revenue_min = ?, revenue_max = ?, currency = ?, source_json = ?, event_count = ? WHERE id = ?",
                           [status, entry.revision, decoded.schemaVersion, decoded.revenue?.min, decoded.revenue?.max,
                            // The app's currency even when this value carries no revenue, so the app's rows stay in one group.
                            decoded.revenue?.currency ?? entry.schema.currency, source,
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
