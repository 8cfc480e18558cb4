import Logging
import Metrics
import ServiceLifecycle
import Store
import Postback

/// Decodes, in the background, the postbacks stored before their app had a schema: a schema upload answers at once
/// (`PUT /v1/schemas/{app}` says how many wait) and this service decodes them at ``PostbackLedger/backlogPace``
/// (small transactions with pauses, so ingest keeps the writer), oldest first, at start, after an upload through this
/// receiver and every `interval` (an upload through another receiver or the CLI). Progress shows as
/// `Schema-Waiting-Postbacks` on `GET /v1/schemas/{app}`.
final class SchemaBacklogDecoder: Service, Sendable {
    let store: StoreDatabase
    let interval: Double
    let logger: Logger
    private let wakeups = Wakeups()
    private let decoded: Counter

    /// Creates the service; nothing runs until ``run()``.
    init(store: StoreDatabase, interval: Double = 10, logger: Logger, metrics: any MetricsFactory) {
        self.store = store
        decoded = Counter(label: "countersign_backlog_decoded_postbacks_total", factory: metrics)
        self.interval = interval
        self.logger = logger
    }

    /// Starts a round now: a schema was uploaded through this receiver.
    func schemaUploaded() {
        wakeups.wake()
    }

    func run() async throws {
        // Graceful shutdown cancels the rounds; what is decoded is committed batch by batch, the rest waits.
        try? await cancelWhenGracefulShutdown { [self] in
            var done: [AppID: Int] = [:]
            try await wakeups.run(every: interval) {
                try await round(done: &done)
                return true
            }
        }
    }

    /// Decodes the waiting postbacks of every app whose schema revision changed since its backlog was last emptied
    /// (every app, at start), a batch at a time. Once an app has a schema, ingest decodes its postbacks, so only a new
    /// revision can leave a backlog: a round where no revision changed reads one row per app.
    private func round(done: inout [AppID: Int]) async throws {
        let revisions: [SchemaRegistry.Revision]
        do { revisions = try await store.schemas.revisions() } catch {
            logger.error("cannot list the apps with a schema", metadata: ["error": "\(error)"])
            return
        }
        for revision in revisions where done[revision.app] != revision.revision {
            let app = revision.app
            do {
                let total = try await store.ledger.decodeBacklog(app: app)
                // Rows another transaction held (a duplicate being counted, a reverify) were passed over: the app is
                // done only when none waits, else the next round takes them.
                if try await store.ledger.waitingForDecoding(app: app) == 0 { done[app] = revision.revision }
                decoded.increment(by: total)
                if total > 0 { logger.info("decoded postbacks stored before the app's schema", metadata: ["app": "\(app)", "decoded": "\(total)"]) }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.error("cannot decode an app's waiting postbacks", metadata: ["app": "\(app)", "error": "\(error)"])
            }
        }
    }
}
