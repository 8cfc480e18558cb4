import Logging

/// PostgresClient's background logger, less its one false alarm: the warning that a connection was asked for before the
/// client's `run()` began. ``PostgresEngine/run()`` fires `started` just before it calls `run()`, so a lease can get
/// there first, and it waits for the pool all the same; PostgresNIO has no signal of its own start to wait for instead.
/// Everything else passes, such as the pool's "Connection creation failed" (info), which says why PostgreSQL cannot be
/// reached.
struct PoolLogFilter: LogHandler {
    /// The store's own handler.
    var wrapped: any LogHandler

    /// The warning's text, as PostgresNIO logs it (`PostgresClient.leaseConnection()`).
    static let leaseBeforeRun = "Trying to lease connection from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet."

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        guard !(event.level == .warning && event.message.description == Self.leaseBeforeRun) else { return }
        wrapped.log(event: event)
    }
}
