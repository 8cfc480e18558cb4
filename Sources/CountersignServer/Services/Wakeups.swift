import Foundation

/// What starts a service's rounds: a tick every `interval` seconds, and each ``wake()`` in between (wakes that come
/// while a round runs fold into one round after it). The one loop the queue runners (``ClaimLoop``), the schema
/// backlog decoder and the app-policy refresher share.
struct Wakeups: Sendable {
    private let events: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// Wakeups that start nothing until ``run(every:onTick:_:)``.
    init() {
        (events, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a round now.
    func wake() {
        continuation.yield()
    }

    /// Ends the rounds once the one running returns (graceful shutdown).
    func finish() {
        continuation.finish()
    }

    /// Runs `round` at once, then after each tick or wake, until ``finish()``, cancellation, or `round` returns false;
    /// `onTick` runs after each tick. Call it once.
    func run(every interval: TimeInterval, onTick: @escaping @Sendable () async -> Void = {}, _ round: () async throws -> Bool) async rethrows {
        let ticker = Task { [continuation] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(interval))
                continuation.yield()
                await onTick()
            }
        }
        defer { ticker.cancel() }
        var iterator = events.makeAsyncIterator()
        repeat {
            guard try await round() else { return }
        } while await iterator.next() != nil && !Task.isCancelled
    }
}
