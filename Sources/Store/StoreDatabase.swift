import Foundation
import GRDB
import JWS
import Postback

/// How hard a commit holds on before it reports success.
public enum Durability: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: survives a process crash (the default).
    case normal
    /// WAL with `synchronous=FULL`: also survives power loss.
    case full
}

/// Settings for opening the store.
public struct StoreSettings: Sendable {
    /// The SQLite file.
    public var path: String
    /// The commit durability.
    public var durability: Durability
    /// How long a write waits for a lock before failing.
    public var busyTimeout: Double

    /// Creates settings.
    public init(path: String, durability: Durability = .normal, busyTimeout: Double = 5) {
        self.path = path
        self.durability = durability
        self.busyTimeout = busyTimeout
    }
}

/// The opened and migrated SQLite database, and the one place that hands out each concern's store over it.
///
/// Each concern has a type of its own (``PostbackLedger``, ``ReportReader``, ``ReportRollup``, ``SchemaRegistry``,
/// ``TokenJobQueue``, ``APIKeyStore``, ``AttributionRecordStore``); this type only opens the file and runs migrations.
public final class StoreDatabase: Sendable {
    /// The GRDB pool (WAL: one writer, concurrent readers).
    public let pool: DatabasePool
    /// Each app's current conversion-value schema, used to decode postbacks as they are stored.
    let catalog = SchemaCatalog()

    /// Opens (creating if needed) the database and runs migrations.
    public init(settings: StoreSettings) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(settings.busyTimeout)
        let synchronous = settings.durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
        }
        let directory = (settings.path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        pool = try DatabasePool(path: settings.path, configuration: configuration)
        try StoreSchema.migrator.migrate(pool)
        try pool.read { [catalog] db in try catalog.load(db) }
    }

    /// Throws unless the database answers a read (for readiness).
    public func checkReadable() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    /// Receipts and postbacks: dedup and replay rules, decoding at ingest, reverify, redecode.
    public var ledger: PostbackLedger { PostbackLedger(pool: pool, catalog: catalog) }
    /// Reports and conversion pages.
    public var reports: ReportReader { ReportReader(pool: pool) }
    /// The report rollup.
    public var rollup: ReportRollup { ReportRollup(pool: pool) }
    /// Conversion-value schemas with their revisions.
    public var schemas: SchemaRegistry { SchemaRegistry(pool: pool, catalog: catalog) }
    /// AdServices token jobs.
    public var tokenJobs: TokenJobQueue { TokenJobQueue(pool: pool) }
    /// API keys.
    public var apiKeys: APIKeyStore { APIKeyStore(pool: pool) }
    /// Apple Ads attribution records.
    public var attributions: AttributionRecordStore { AttributionRecordStore(pool: pool) }
}
