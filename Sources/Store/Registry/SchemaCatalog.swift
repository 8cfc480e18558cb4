import ConversionSchema
import Foundation
import JWS
import Postback
import Synchronization

/// The current schema of each app, held in memory for decoding at ingest and kept in step with the `schemas` table.
///
/// Several receivers may share one database, so the catalogue does not trust its own memory: ``refresh(_:)`` compares
/// each app's latest revision in the database with the one held and loads what changed. Ingest checks the version once
/// per commit, inside the commit's transaction (``forCommit(_:reloaded:)``: SQLite refreshes there, PostgreSQL's batch
/// statement reads the version, and a change is reloaded in a transaction of its own), and decodes with the
/// ``Snapshot`` of the version it checked.
public final class SchemaCatalog: Sendable {
    /// A stored schema revision.
    public struct Entry: Sendable {
        /// Increases with every upload for the app.
        public let revision: Int
        /// The checked schema.
        public let schema: ConversionSchema
    }

    /// The schemas of one catalogue version, as a transaction decodes with them: the version and the entries are
    /// read together, so a batch never decodes with entries of one version checked against another.
    public struct Snapshot: Sendable {
        /// The `schema_catalogue_version` the entries were loaded at; nil before the first load.
        let version: Int64?
        /// Each app's latest revision, when its document passes today's checks.
        let entries: [AppID: Entry]

        /// The current schema for `app`.
        public func entry(app: AppID) -> Entry? { entries[app] }
    }

    /// What was loaded last, by any thread: a cache that each transaction checks against the database.
    private let loaded = Mutex(Snapshot(version: nil, entries: [:]))

    /// An empty catalog.
    public init() {}

    /// The schemas held now, for work that checks them later (a request's decoding, kept by its commit only when
    /// the revision is still current).
    public func snapshot() -> Snapshot { loaded.withLock { $0 } }

    /// The schemas of the database's catalogue version (raised by a trigger on every change to `schemas`, by any
    /// receiver or command), loading every app whose latest revision differs from the one held when that version is
    /// not the one held. Every SQLite commit runs it, and PostgreSQL's ingest after a change (its commits read the
    /// version in their batch statement, ``forCommit(_:reloaded:)``), so its one-row query is prepared; the catalogue itself is
    /// read only after a change.
    ///
    /// On PostgreSQL the version is read through `schema_catalogue_version()`, which holds a shared lock until the
    /// transaction ends: a schema upload (``SchemaRegistry/put(app:document:)``) takes it exclusively, so the version
    /// (and the schemas of it) cannot change before the transaction ends. SQLite has one writer, so its batches and
    /// uploads never overlap.
    @discardableResult
    func refresh(_ session: any SQLSession) throws -> Snapshot {
        let version = try session.rows(Self.versionSQL(session.dialect), [], reuse: .prepared).first?.get(at: 0, as: Int64.self)
        let held = snapshot()
        if let version, held.version == version { return held }
        return try load(session, version: version, from: held)
    }

    /// A commit's catalogue with one round trip less on PostgreSQL: the schemas held (or `reloaded`, just read by
    /// ``Changed/retrying(reload:_:)``), and their version, which the batch's own statement reads under the catalogue's
    /// shared lock (``PostbackLedger``) and gives to ``confirm(expected:found:)`` before the commit. With no version
    /// held (another batch found a change) it throws ``Changed``, so the catalogue is read again in a transaction of its
    /// own: read inside the batch's, it would take that lock before the batch's keys, where every other batch takes it
    /// after them. SQLite refreshes now and returns no version to confirm.
    func forCommit(_ session: any SQLSession, reloaded: Snapshot?) throws -> (schemas: Snapshot, expected: Int64?) {
        guard session.dialect == .postgres else { return (try refresh(session), nil) }
        let held = reloaded ?? snapshot()
        if let expected = held.version { return (held, expected) }
        // A reload that found no version (the row is always there) refreshes here rather than reload for ever (a
        // PostgreSQL batch then runs whole in a transaction, ``PostbackLedger``).
        guard reloaded == nil else { return (try refresh(session), nil) }
        throw Changed()
    }

    /// Throws ``Changed`` when the database's version, `found` by a batch under the catalogue's shared lock, is not the
    /// `expected` one its schemas are of, and leaves the catalogue to be reloaded: the caller rolls back and runs the
    /// batch again.
    func confirm(expected: Int64, found: Int64?) throws {
        guard found != expected else { return }
        loaded.withLock { if $0.version == expected { $0 = Snapshot(version: nil, entries: $0.entries) } }
        throw Changed()
    }

    /// The catalogue changed after a batch was decoded with it (``confirm(expected:found:)``).
    struct Changed: Error {
        /// Runs `transaction` until it ends without this error; after each one `reload` reads the catalogue again in a
        /// transaction of its own and hands it to the next run, so a transaction runs again only when the catalogue
        /// changed once more meanwhile. A batch that read it inside its own transaction would take the catalogue's
        /// shared lock before its keys, where every other batch takes it after them: behind a waiting upload, two such
        /// batches could wait for each other until PostgreSQL's deadlock check (a second) reordered the queue.
        static func retrying<T>(reload: () throws -> Snapshot, _ transaction: (Snapshot?) throws -> T) throws -> T {
            var reloaded: Snapshot?
            while true {
                do { return try transaction(reloaded) } catch is Changed { reloaded = try reload() }
            }
        }
    }

    private static func versionSQL(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: "SELECT version FROM schema_catalogue_version"
        case .postgres: "SELECT schema_catalogue_version() AS version"
        }
    }

    /// The schemas of `version`: those of `held` whose revision is still the latest, and the others read from the
    /// table. Kept for later transactions unless a later version is held already (the version only grows; a read
    /// snapshot may see an older one).
    private func load(_ session: any SQLSession, version: Int64?, from held: Snapshot) throws -> Snapshot {
        let latest = try session.rows("SELECT app, max(revision) AS revision FROM schemas GROUP BY app", [])
        // Only the apps in the table now: one held before and no longer there has no schema.
        var entries: [AppID: Entry] = [:]
        for row in latest {
            let app = try row.get("app", as: AppID.self)
            let revision = try row.get("revision", as: Int.self)
            if let entry = held.entries[app], entry.revision == revision {
                entries[app] = entry
                continue
            }
            let document = try session.value("SELECT document FROM schemas WHERE app = ? AND revision = ?", [app.description, revision], as: String.self) ?? ""
            // A stored document that fails today's checks leaves the app without a schema; it is read again only after
            // the next change to the catalogue.
            if let schema = SchemaReader.check(Array(document.utf8)).schema { entries[app] = Entry(revision: revision, schema: schema) }
        }
        let snapshot = Snapshot(version: version, entries: entries)
        loaded.withLock { current in
            guard let newer = version, let held = current.version else {
                if current.version == nil { current = snapshot }
                return
            }
            if newer > held { current = snapshot }
        }
        return snapshot
    }
}

/// What an app's schema says about one postback, as the decode columns of its `postbacks` row and its
/// `postback_events` rows. Computed without SQL, so ingest computes it on the request's task and the commit only
/// writes it (``PostbackLedger``); `redecode` and a verified copy replacing a row write it with ``EventWriter``.
struct PostbackDecoding: Sendable {
    /// The schema revision it was decoded with; nil when the app has no schema.
    let revision: Int?
    /// The values of ``columnNames``.
    let columns: [SQLValue]
    /// One row of ``eventColumnNames`` per event.
    let events: [[SQLValue]]

    /// The decode columns of `postbacks`, in ``columns`` order.
    static let columnNames = ["decode_status", "schema_revision", "schema_version", "revenue_min", "revenue_max", "currency", "source_json", "event_count"]
    /// Their PostgreSQL array types for a batch insert.
    static let postgresColumnTypes: [SQLArray.Element] = [.text, .bigint, .bigint, .double, .double, .text, .text, .bigint]
    /// The columns of an event row after its `postback_id`, in ``events`` order.
    static let eventColumnNames = ["app", "schema_revision", "schema_version", "event_index", "name", "count", "revenue_min", "revenue_max", "currency", "properties"]
    /// Their PostgreSQL array types.
    static let postgresEventTypes: [SQLArray.Element] = [.text, .bigint, .bigint, .bigint, .text, .bigint, .double, .double, .text, .text]

    /// Decodes `postback` with `entry` (the app's current schema), or records that it has none.
    init(_ entry: SchemaCatalog.Entry?, postback: Postback, receivedAt: Date) {
        revision = entry?.revision
        guard let entry else {
            columns = [.null, .null, .null, .null, .null, .null, .null, .integer(0)]
            events = []
            return
        }
        switch SchemaDecoder.decode(entry.schema, postback: postback, receivedAt: receivedAt) {
        case .failure(let failure):
            columns = [failure.rawValue.sqlValue, .integer(Int64(entry.revision)), .null, .null, .null, .null, .null, .integer(0)]
            events = []
        case .success(let decoded):
            let app = postback.app.description
            events = decoded.events.enumerated().map { index, event in
                let properties = event.properties.isEmpty && decoded.properties.isEmpty ? nil
                    : JSONValue.object(JSONObject(decoded.properties.merging(event.properties) { $1 }.sorted { $0.key < $1.key }
                        .map { JSONMember(key: $0.key, value: .string($0.value)) })).serialized
                let values: [any SQLValueConvertible] = [app, entry.revision, decoded.schemaVersion, index, event.name, event.count,
                                                         event.revenue?.min, event.revenue?.max, event.revenue?.currency, properties]
                return values.map(\.sqlValue)
            }
            let source = decoded.source.isEmpty ? nil : Explanation.sourceLevels(decoded.source).serialized
            // A value the schema defines as no event is `no_event`, told apart from one it leaves undefined.
            let status = decoded.events.isEmpty && decoded.defined ? "no_event" : "decoded"
            let values: [any SQLValueConvertible] = [
                status, entry.revision, decoded.schemaVersion, decoded.revenue?.min, decoded.revenue?.max,
                // The app's currency even when this value carries no revenue, so the app's rows stay in one group.
                decoded.revenue?.currency ?? entry.schema.currency, source, decoded.events.reduce(0) { $0 + ($1.count ?? 1) },
            ]
            columns = values.map(\.sqlValue)
        }
    }
}

/// Writing a postback's decoding over a stored row, shared by `redecode` and a verified copy that replaces a row.
enum EventWriter {
    static let updateSQL = "UPDATE postbacks SET \(PostbackDecoding.columnNames.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"
    static let insertSQL = "INSERT INTO postback_events (postback_id, \(PostbackDecoding.eventColumnNames.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: PostbackDecoding.eventColumnNames.count + 1).joined(separator: ", ")))"

    /// Replaces the events and decode columns of postback `rowID` with what the app's current schema says.
    static func decode(_ db: any SQLSession, rowID: Int64, postback: Postback, receivedAt: Date, schemas: SchemaCatalog.Snapshot) throws {
        let decoding = PostbackDecoding(schemas.entry(app: postback.app), postback: postback, receivedAt: receivedAt)
        try db.execute("DELETE FROM postback_events WHERE postback_id = ?", [rowID])
        try insertEvents(db, rowID: rowID, decoding)
        try db.execute(updateSQL, decoding.columns + [SQLValue.integer(rowID)])
    }

    /// Inserts the events of `decoding` for postback `rowID`, one prepared statement each.
    static func insertEvents(_ db: any SQLSession, rowID: Int64, _ decoding: PostbackDecoding) throws {
        for event in decoding.events { try db.execute(insertSQL, [SQLValue.integer(rowID)] + event) }
    }
}

/// Outcome of storing a schema upload.
public enum SchemaUpload: Sendable {
    /// Stored as `revision`; `waiting` postbacks of the app, stored before it had a schema, wait to be decoded in the
    /// background.
    case stored(revision: Int, warnings: [SchemaDiagnostic], waiting: Int)
    /// Refused: the static checks found errors.
    case invalid([SchemaDiagnostic])
}
