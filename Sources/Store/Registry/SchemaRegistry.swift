import ConversionSchema
import Foundation
import Postback

/// Conversion-value schemas: every uploaded revision, and the catalogue of each app's current one that ingest decodes with.
public struct SchemaRegistry: Sendable {
    let engine: any DatabaseEngine
    let catalog: SchemaCatalog
    /// Decodes the app's waiting postbacks after an upload.
    let ledger: PostbackLedger

    /// Whether `app` has a current schema that ingest and redecode decode with (another receiver may have uploaded it).
    public func hasCurrentSchema(app: AppID) async throws -> Bool {
        let catalog = self.catalog
        return try await engine.read { session in try catalog.refresh(session) }.entry(app: app) != nil
    }

    /// Checks and stores a schema document for `app`; the new revision decodes the app's postbacks from the next batch
    /// on. The app's postbacks stored before it had a schema are decoded in the background (`SchemaBacklogDecoder` in
    /// `serve`, or `countersign redecode`); the answer says how many wait.
    /// Its `source-mappings` replace the dated mappings of each ad network they name, in the same transaction.
    /// The revision is the next for the app; two uploads racing on different receivers get different revisions, because
    /// `(app, revision)` is unique and the loser retries.
    public func put(app: AppID, document: [UInt8]) async throws -> SchemaUpload {
        let check = SchemaReader.check(document)
        guard let schema = check.schema else { return .invalid(check.errors) }
        guard schema.app == app else {
            return .invalid([SchemaDiagnostic(severity: .error, path: "$.app", message: "is \(schema.app) but the upload is for app \(app)")])
        }
        let registered = try await engine.read { session in try session.value("SELECT currency FROM apps WHERE app = ?", [app], as: String.self) }
        if let registered, let currency = schema.currency, registered != currency {
            return .invalid([SchemaDiagnostic(severity: .error, path: "$.currency", message: "is \(currency) but the app registry says app \(app) reports in \(registered)")])
        }
        let text = String(decoding: document, as: UTF8.self)
        // The catalogue is not refreshed here: what this transaction sees is not committed (and a rolled-back upload's
        // version number is given to the next one), so the next commit's check finds the new version and reloads.
        let revision = try await engine.write { session -> Int in
            if session.dialect == .postgres {
                // Waits for batches in flight on every receiver (see `SchemaCatalog.refresh`); later ones see this schema.
                try session.execute("SELECT pg_advisory_xact_lock(?)", [PostgresMigrations.catalogLockKey])
            }
            // `schemas.app` is text: the app id as it is written.
            let revision = (try session.value("SELECT max(revision) FROM schemas WHERE app = ?", [app.description], as: Int.self) ?? 0) + 1
            let stored = try session.execute("INSERT INTO schemas (app, revision, document, uploaded_at) VALUES (?, ?, ?, ?) ON CONFLICT (app, revision) DO NOTHING",
                                              [app.description, revision, text, Timestamp.format(Date())])
            guard stored == 1 else { throw SchemaRevisionTaken(app: app, revision: revision) }
            for (adNetwork, mappings) in schema.sourceMappings {
                try NameRegistry.replaceMappings(session, app: app, adNetwork: adNetwork, mappings)
            }
            return revision
        }
        return .stored(revision: revision, warnings: check.warnings, waiting: try await ledger.waitingForDecoding(app: app))
    }

    /// The stored document for `app` at `revision` (the latest when nil), with its revision.
    public func document(app: AppID, revision: Int? = nil) async throws -> (revision: Int, document: String)? {
        try await engine.read { session in
            let row = if let revision {
                try session.row("SELECT revision, document FROM schemas WHERE app = ? AND revision = ?", [app.description, revision])
            } else {
                try session.row("SELECT revision, document FROM schemas WHERE app = ? ORDER BY revision DESC LIMIT 1", [app.description])
            }
            return try row.map { (try $0.get("revision", as: Int.self), try $0.get("document", as: String.self)) }
        }
    }

    /// One stored revision of an app's schema.
    public struct Revision: Sendable, Equatable {
        public let app: AppID
        public let revision: Int
        public let uploadedAt: String
        /// The document's size in bytes.
        public let bytes: Int
    }

    /// Every revision of `app`'s schema, oldest first; with no app, each app's latest revision, by app.
    public func revisions(app: AppID? = nil) async throws -> [Revision] {
        try await engine.read { session in
            let rows = if let app {
                try session.rows("SELECT app, revision, uploaded_at, length(document) AS bytes FROM schemas WHERE app = ? ORDER BY revision", [app.description])
            } else {
                try session.rows("""
                    SELECT s.app, s.revision, s.uploaded_at, length(s.document) AS bytes FROM schemas s
                    WHERE s.revision = (SELECT max(revision) FROM schemas t WHERE t.app = s.app) ORDER BY s.app
                    """, [])
            }
            return try rows.map {
                Revision(app: try $0.get("app"), revision: try $0.get("revision"), uploadedAt: try $0.get("uploaded_at"), bytes: try $0.get("bytes"))
            }
        }
    }
}

/// Another upload for the same app took this revision first (on another receiver); uploading again succeeds.
public struct SchemaRevisionTaken: Error, CustomStringConvertible {
    /// The app.
    public let app: AppID
    /// The revision taken.
    public let revision: Int
    public var description: String { "revision \(revision) of app \(app)'s schema was stored by another upload at the same moment; upload again" }
}
