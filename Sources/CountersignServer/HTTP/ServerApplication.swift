import Foundation
import Hummingbird
import JWS
import Logging
import Metrics
import NIOCore
import Postback
import Prometheus
import ServiceLifecycle
import Store

/// Answers 503 once graceful shutdown has begun, so a device retries elsewhere or later.
struct ShutdownMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if Task.isShuttingDownGracefully {
            throw APIError(.serviceUnavailable, .shuttingDown, "the server is shutting down; retry later")
        }
        return try await next(request, context)
    }
}

/// The HTTP application: store, writer, router and background services, built from settings. `serve` runs it; tests
/// run it in-process (`.router`) or on a socket (`.live`), and read its routes.
package struct ServerApplication {
    /// The well-known and generic postback paths.
    static let postbackRoutes: [(path: String, route: IntakeRoute)] = [
        ("/.well-known/appattribution/report-attribution", .aak),
        ("/.well-known/skadnetwork/report-attribution", .skan),
        ("/postbacks", .any),
    ]

    let settings: ServerSettings
    let logger: Logger
    let router: Router<AppRequestContext>
    let services: [any Service]
    /// The bounds on heavy requests (exports, large reports, reconciliation), shared by their routes.
    let limits: ServerLimits

    /// How to open the store `settings` name.
    package static func storeSettings(_ settings: ServerSettings) throws -> StoreSettings {
        StoreSettings(
            location: try DatabaseLocation(settings.database), durability: settings.durability, busyTimeout: settings.busyTimeout,
            poolSize: settings.databasePool, connectTimeout: settings.databaseConnectTimeout,
            statementTimeout: settings.databaseStatementTimeout)
    }

    /// Opens (creating and migrating) the store `settings` name; the caller runs it (``StoreDatabase/run()``) for as long
    /// as the application runs.
    package static func openStore(_ settings: ServerSettings) throws -> StoreDatabase {
        try StoreDatabase(settings: try storeSettings(settings))
    }

    /// Builds every route and service over `store`, which must be running; nothing else runs until
    /// ``application(onServerRunning:)`` runs. Every metric goes to `metrics`, which `GET /metrics` shows (no metric
    /// goes through a process-wide registry, so two applications in one process, as in tests, count apart). `limits`
    /// bounds heavy requests (tests pass their own to hold permits).
    package init(settings: ServerSettings, store: StoreDatabase, keyRing: KeyRing, logger: Logger, metrics: PrometheusCollectorRegistry,
                 limits: ServerLimits = ServerLimits()) async throws {
        self.settings = settings
        self.logger = logger
        self.limits = limits
        let factory = PrometheusMetricsFactory(registry: metrics)
        let writer = GroupCommitWriter(database: store, metrics: factory)
        keyRing.prepare()
        let verifier = PostbackVerifier(keyRing: keyRing)
        let policy = TrustPolicy(allowDevelopment: settings.allowDevelopment, acceptedAdNetworks: Set(settings.acceptedAdNetworks))
        let appRules = try await AppPolicyRefresher(store: store, base: policy, logger: logger, metrics: factory)
        let ingest = Ingest(
            verifier: verifier,
            appRules: appRules,
            writer: writer,
            bodyLimit: settings.bodyLimit,
            sources: settings.sources,
            rejectedBodies: IntakeBudget(kind: "rejected_body", perSourcePerMinute: settings.rejectedBodyBudget, globalPerMinute: settings.rejectedGlobalBudget,
                                         metrics: factory, logger: logger),
            rejectedReceipts: IntakeBudget(kind: "rejected_receipt", perSourcePerMinute: settings.rejectedReceiptBudget,
                                           globalPerMinute: settings.rejectedReceiptGlobalBudget, metrics: factory, logger: logger),
            unverifiable: IntakeBudget(kind: "unverifiable", perSourcePerMinute: settings.unverifiableBudget, globalPerMinute: settings.unverifiableGlobalBudget,
                                       metrics: factory, logger: logger),
            metrics: IngestMetrics(factory: factory)
        )
        // HEAD is answered wherever GET is (the same headers, no body).
        let router = Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: ErrorAnswerMiddleware())
        router.add(middleware: ShutdownMiddleware())
        router.add(middleware: RequestTextMiddleware())
        // The trie router matches a path with or without its trailing slash.
        for (path, route) in Self.postbackRoutes {
            router.post(RouterPath(path)) { request, context in try await ingest.handle(request, context: context, route: route) }
        }
        let privateAPI = PrivateAPI(router: router, store: store)
        let backlog = SchemaBacklogDecoder(store: store, logger: logger, metrics: factory)
        SchemaRoutes.add(to: privateAPI, store: store, backlog: backlog)
        ReportRoutes.add(to: privateAPI, store: store, limits: limits)
        NameRoutes.add(to: privateAPI, store: store)
        PostbackRoutes.add(to: privateAPI, store: store, verifier: verifier, appRules: appRules)
        AppRoutes.add(to: privateAPI, store: store, appRules: appRules)
        ForwardingRoutes.add(to: privateAPI, store: store, maximumRules: settings.forwardMaxRules)
        AlertRoutes.add(to: privateAPI, store: store)
        AdvertiserRoutes.add(to: privateAPI, store: store)
        AppleAdsRoutes.addPrivate(to: privateAPI, store: store)
        SpendRoutes.add(to: privateAPI, store: store, uploadLimit: settings.spendUploadLimit, maximumGroups: settings.performanceMaxGroups, limits: limits)
        SpendRoutes.addReconciliation(to: privateAPI, store: store, uploadLimit: settings.reconcileUploadLimit, sizes: settings.reconcileSizes,
                                      limiter: limits.reconcile)
        let tokenExchange = TokenExchangeRunner(
            store: store,
            configuration: .init(url: settings.adServicesURL, policy: settings.adServicesPolicy, concurrency: settings.adServicesConcurrency),
            logger: logger, metrics: factory
        )
        AppleAdsRoutes.addPublic(to: router, store: store, tokenExchange: tokenExchange,
                                 limiter: SourceRateLimiter(rate: settings.publicRate, burst: settings.publicBurst), sources: settings.sources,
                                 records: IntakeBudget(kind: "apple_ads_submission", perSourcePerMinute: settings.publicRecordBudget,
                                                       globalPerMinute: settings.publicRecordGlobalBudget, metrics: factory, logger: logger),
                                 maximumQueue: settings.adServicesMaximumQueue)
        // Names of Apple Ads campaigns, ad groups and keywords, read only when an API user is configured.
        let appleAdsNames: [any Service] = settings.appleAdsCredentials.map { credentials in
            [AppleAdsNameRefresher(
                store: store,
                client: AppleAdsNameClient(configuration: .init(credentials: credentials, tokenURL: settings.appleAdsTokenURL,
                                                                platformURL: settings.appleAdsAPIURL, v5URL: settings.appleAdsV5URL),
                                           metrics: factory),
                configuration: .init(interval: settings.appleAdsNamesInterval, maximumAge: settings.appleAdsNamesMaxAge),
                logger: logger
            )]
        } ?? []
        DashboardRoutes.add(to: router, chartLibrary: settings.chartLibrary)
        router.get("/healthz") { request, _ in
            try QueryParameters.refuseUnknown(request, allowed: [])
            return JSONResponse.make(JSONObject([JSONMember(key: "status", value: .string("ok"))]))
        }
        router.get("/readyz") { request, _ in
            try QueryParameters.refuseUnknown(request, allowed: [])
            do {
                try await store.checkReadable()
            } catch {
                throw APIError(.serviceUnavailable, .storageUnavailable, "the database cannot be read")
            }
            // After a failed commit, ready only if a write can succeed now (the next commit clears the flag).
            if !writer.isHealthy, (try? await store.ledger.probeWrite()) == nil {
                throw APIError(.serviceUnavailable, .storageFailing, "the last commit failed and writes still fail")
            }
            return JSONResponse.make(JSONObject([JSONMember(key: "status", value: .string("ready"))]))
        }
        router.get("/metrics") { [metricsRequireKey = settings.metricsRequireKey] request, _ in
            try QueryParameters.refuseUnknown(request, allowed: [])
            if metricsRequireKey { _ = try await RequireScope.authorize(request, store: store, scope: .metrics) }
            return JSONResponse.make(text: metrics.emitToString(), contentType: "text/plain; version=0.0.4")
        }
        router.add(middleware: UnmatchedRouteMiddleware(routes: router.routes))
        self.router = router
        let alertSender = AlertSender(store: store, schedule: settings.forwardSchedule, logger: logger, metrics: factory)
        services = [writer, tokenExchange, appRules, backlog, RetentionPruner(store: store, rejectedRetention: settings.rejectedRetentionDays * 86_400,
                                                                    unverifiableRetention: settings.unverifiableRetentionDays * 86_400, logger: logger,
                                                                    metrics: factory),
                    Forwarder(store: store, schedule: settings.forwardSchedule, logger: logger, metrics: factory), alertSender,
                    AlertWatcher(store: store, interval: settings.alertInterval, sender: alertSender, logger: logger, metrics: factory),
                    MemoryTrimmer(limiters: limits.all, logger: logger)] + appleAdsNames
    }

    /// Every route the router serves: its method and path template.
    var routes: [Router<AppRequestContext>.RouteDescription] { router.routes }

    /// The application to run: the HTTP server on the configured address, with the background services.
    package func application(onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }) -> some ApplicationProtocol {
        let requestTimeout = TimeAmount.nanoseconds(Int64(settings.requestTimeout * 1e9))
        let sendTimeout = TimeAmount.nanoseconds(Int64(settings.sendTimeout * 1e9))
        return Application(
            router: router,
            server: .http1(configuration: .init(
                additionalChannelHandlers: [RequestDeadlineHandler(timeout: requestTimeout), SendTimeoutHandler(timeout: sendTimeout),
                                            MalformedRequestHandler(), ExpectContinueHandler()],
                idleTimeout: .nanoseconds(Int64(settings.idleTimeout * 1e9))
            )),
            configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: "countersign"),
            services: services,
            onServerRunning: onServerRunning,
            logger: logger
        )
    }
}
