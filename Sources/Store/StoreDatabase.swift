import Foundation
import Logging
import Postback
import ServiceLifecycle

/// How hard a SQLite commit holds on before it reports success. PostgreSQL commits with `synchronous_commit` as the
/// server sets it (on by default: the commit is on disk before the 200).
public enum Durability: String, Sendable, CaseIterable {
    /// WAL with `synchronous=NORMAL`: survives a process crash, but a power loss can undo the last commits.
    case normal
    /// WAL with `synchronous=FULL`: also survives power loss (the default; with group commit it costs no measurable
    /// ingest, docs/performance.md).
    case full
}

/// Settings for opening the store.
public struct StoreSettings: Sendable {
    /// The SQLite file or the PostgreSQL server.
    public var location: DatabaseLocation
    /// The SQLite commit durability.
    public var durability: Durability
    /// How long a SQLite write waits for a lock before failing.
    public var busyTimeout: Double
    /// The most PostgreSQL connections this process opens.
    public var poolSize: Int
    /// How long opening a PostgreSQL connection, or waiting for a free one, may take.
    public var connectTimeout: Double
    /// How long one PostgreSQL statement may run; the server cancels it past this, and a connection that gives no answer
    /// at all within a few seconds more is closed.
    public var statementTimeout: Double

    /// Creates settings.
    public init(location: DatabaseLocation, durability: Durability = .full, busyTimeout: Double = 5, poolSize: Int = 10, connectTimeout: Double = 5,
                statementTimeout: Double = 30) {
        self.location = location
        self.durability = durability
        self.busyTimeout = busyTimeout
        self.poolSize = poolSize
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
    }
}

/// The opened and migrated database, and the one place that hands out each concern's store over it.
///
/// Each concern has a type of its own (``PostbackLedger``, ``ReportReader``, ``ReportRollup``, ``SchemaRegistry``,
/// ``TokenJobQueue``, ``APIKeyStore``, ``AttributionRecordStore``, ``NameRegistry``, ``AppleAdsNameStore``, ``AppRegistry``, ``ForwardingOutbox``), written once over ``DatabaseEngine``; this type only
/// opens the engine (SQLite or PostgreSQL) and runs its migrations.
public final class StoreDatabase: Service, Sendable {
    /// The engine the store runs on.
    public let engine: any DatabaseEngine
    /// Each app's current conversion-value schema, used to decode postbacks as they are stored.
    let catalog: SchemaCatalog
    /// Receipt ids reserved from PostgreSQL's sequence (unused on SQLite).
    let receiptIDs = ReceiptIDs()
    /// The name this process's arrival counts are written under: one per process on PostgreSQL, so receivers never
    /// wait on each other's rows; empty on SQLite, which has one writer.
    let arrivalWriter: String
    /// Arrival counts of committed batches not yet written.
    let arrivalTally = ArrivalTally()

    /// Opens (creating if needed) the database, runs migrations and loads the schema catalogue, on a connection of its
    /// own. Nothing else reaches PostgreSQL until ``run()`` runs.
    public init(settings: StoreSettings, logger: Logger = Logger(label: "countersign.store")) throws {
        let catalog = SchemaCatalog()
        self.catalog = catalog
        // The catalogue, and the offsets of zones registered before the offsets table existed (a write only when one
        // is missing).
        let setUp: (any SQLSession) throws -> Void = { session in
            try catalog.refresh(session)
            for zone in try TimeZoneOffsets.missing(session) { try TimeZoneOffsets.ensure(session, zone: zone) }
        }
        switch settings.location {
        case .sqlite(let path):
            arrivalWriter = ""
            let sqlite = try SQLiteEngine(path: path, durability: settings.durability, busyTimeout: settings.busyTimeout)
            if try sqlite.snapshot({ session in try catalog.refresh(session); return try TimeZoneOffsets.missing(session) }).isEmpty == false {
                try sqlite.transaction(setUp)
            }
            engine = sqlite
        case .postgres(let location):
            arrivalWriter = String(UUID().uuidString.prefix(8)).lowercased()
            engine = try PostgresEngine(location: location, maximumConnections: settings.poolSize, connectTimeout: settings.connectTimeout,
                                        statementTimeout: settings.statementTimeout, logger: logger, setUp: setUp)
        }
    }

    /// Runs the engine while the store is open (PostgreSQL's pool of connections) until ``close()`` or cancellation.
    /// Whoever opens a store runs it: `serve` beside its services, the CLI for the length of a command. It cannot fail:
    /// a connection that fails is the pool's to replace, and a query's error goes to the query.
    public func run() async {
        await engine.run()
    }

    /// Throws unless the database answers a read (for readiness).
    public func checkReadable() async throws {
        _ = try await engine.read { session in try session.value("SELECT 1", as: Int.self) }
    }

    /// Closes the engine's connections.
    public func close() { engine.close() }

    /// Receipts and postbacks: dedup and replay rules, decoding at ingest, reverify, redecode.
    public var ledger: PostbackLedger { PostbackLedger(engine: engine, catalog: catalog, receiptIDs: receiptIDs, arrivalWriter: arrivalWriter, arrivalTally: arrivalTally) }
    /// Daily counts of what arrived, for `apps status`.
    public var arrivals: ArrivalLog { ArrivalLog(engine: engine, tally: arrivalTally, writer: arrivalWriter) }
    /// Whether each app is set up right: what arrives, how it fares, and whether developer copies arrive.
    public var setupStatus: SetupStatus { SetupStatus(engine: engine, tally: arrivalTally) }
    /// Whether each stored postback counts, kept in step with the app registry and the accepted ad networks.
    public var counting: CountingRules { CountingRules(engine: engine) }
    /// Spend and claims networks report, and exchange rates, with each import's provenance.
    public var spend: SpendLedger { SpendLedger(engine: engine) }
    /// What installs cost and returned, and what networks claimed against what Apple signed.
    public var performance: PerformanceReader { PerformanceReader(engine: engine) }
    /// Cohort curves: revenue per install and ROAS by days 2, 7 and 35 over closed install weeks.
    public var cohorts: CohortCurveReader { CohortCurveReader(engine: engine) }
    /// What each ad network really signs: protocol versions, winners, windows, tiers, view-through, re-engagements.
    public var signingMix: SigningMix { SigningMix(engine: engine) }
    /// Which of the postbacks a network claims Apple signed.
    public var reconciliation: PostbackReconciliation { PostbackReconciliation(engine: engine) }
    /// Reports and conversion pages.
    public var reports: ReportReader { ReportReader(engine: engine) }
    /// The report rollup.
    public var rollup: ReportRollup { ReportRollup(engine: engine) }
    /// Conversion-value schemas with their revisions.
    public var schemas: SchemaRegistry { SchemaRegistry(engine: engine, catalog: catalog, ledger: ledger) }
    /// AdServices token jobs.
    public var tokenJobs: TokenJobQueue { TokenJobQueue(engine: engine) }
    /// API keys.
    public var apiKeys: APIKeyStore { APIKeyStore(engine: engine) }
    /// The ad-network registry and campaign, ad-group and creative names.
    public var names: NameRegistry { NameRegistry(engine: engine) }
    /// Apple Ads campaign, ad-group and keyword names read from Apple's API.
    public var appleAdsNames: AppleAdsNameStore { AppleAdsNameStore(engine: engine) }
    /// Apple Ads attribution records.
    public var attributions: AttributionRecordStore { AttributionRecordStore(engine: engine) }
    /// How long the receipts of rejected requests and unverifiable postbacks are kept.
    public var retention: Retention { Retention(engine: engine) }
    /// The apps this installation serves, with their policies.
    public var apps: AppRegistry { AppRegistry(engine: engine) }
    /// Forwarding rules and the outbox of postbacks to relay to partners.
    public var forwarding: ForwardingOutbox { ForwardingOutbox(engine: engine) }
    /// The delivery templates forwarding rules name.
    public var deliveryTemplates: DeliveryTemplateStore { DeliveryTemplateStore(engine: engine) }
    /// Advertisers and their apps.
    public var advertisers: AdvertiserRegistry { AdvertiserRegistry(engine: engine) }
    /// Alert rules, their checks and the outbox of alerts.
    public var alerts: AlertBook { AlertBook(engine: engine) }
    /// Advertisers' raw pulls of their postbacks.
    public var pull: PostbackPull { PostbackPull(engine: engine) }
    /// Online backups of an SQLite store.
    public var backup: StoreBackup { StoreBackup(engine: engine) }
}
