import ConversionSchema
import Foundation
import GRDB
import Postback

/// Conversion-value schemas: every uploaded revision, and the catalogue of each app's current one that ingest decodes with.
public struct SchemaRegistry: Sendable {
    let pool: DatabasePool
    let catalog: SchemaCatalog

    /// Whether `app` has a current schema that ingest and redecode decode with.
    public func hasCurrentSchema(app: String) -> Bool { catalog.entry(app: app) != nil }

    /// Checks and stores a schema document for `app`, then decodes that app's postbacks that were waiting for one.
    public func put(app: String, document: [UInt8]) async throws -> SchemaUpload {
        let check = SchemaReader.check(document)
        guard let schema = check.schema else { return .invalid(check.errors) }
        guard schema.app == app else {
            return .invalid([SchemaDiagnostic(severity: .error, path: "$.app", message: "is \(schema.app) but the upload is for app \(app)")])
        }
        let catalog = self.catalog
        let revision = try await pool.write { db -> Int in
            let revision = (try Int.fetchOne(db, sql: "SELECT max(revision) FROM schemas WHERE app = ?", arguments: [app]) ?? 0) + 1
            try db.execute(sql: "INSERT INTO schemas (app, revision, document, uploaded_at) VALUES (?, ?, ?, ?)",
                           arguments: [app, revision, String(decoding: document, as: UTF8.self), Timestamp.format(Date())])
            return revision
        }
        catalog.set(SchemaCatalog.Entry(revision: revision, schema: schema), app: app)
        let decoded = try await PostbackLedger(pool: pool, catalog: catalog).redecode(app: app, from: nil, onlyUndecoded: true) { _, _ in }
        return .stored(revision: revision, warnings: check.warnings, decoded: decoded)
    }

    /// The latest stored document for `app`, with its revision.
    public func document(app: String) async throws -> (revision: Int, document: String)? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT revision, document FROM schemas WHERE app = ? ORDER BY revision DESC LIMIT 1", arguments: [app])
                .map { ($0["revision"], $0["document"]) }
        }
    }
}
