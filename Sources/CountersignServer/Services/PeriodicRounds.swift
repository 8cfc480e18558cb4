import ServiceLifecycle

/// The loop the periodic services share (retention pruning, memory trimming, Apple Ads names): a round, then a pause
/// as long as the round asks for, until graceful shutdown (which ends a pause at once) or cancellation.
enum PeriodicRounds {
    /// Runs `round` until shutdown, pausing `first` before the first one when given.
    static func run(pausingFirst first: Duration? = nil, _ round: () async -> Duration) async {
        if let first { await pause(first) }
        while !stopping {
            let next = await round()
            guard !stopping else { return }
            await pause(next)
        }
    }

    private static var stopping: Bool { Task.isShuttingDownGracefully || Task.isCancelled }

    private static func pause(_ duration: Duration) async {
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
    }
}
