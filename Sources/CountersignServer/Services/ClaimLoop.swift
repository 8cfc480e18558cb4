import Foundation
import ServiceLifecycle

/// The loop the queue runners share (AdServices token exchanges, forwarding deliveries): wake on a tick or a nudge,
/// claim what is due, run each claimed item in a task of its own, and on graceful shutdown stop claiming and wait for
/// the items in flight (each bounded by its own timeout).
struct ClaimLoop: Sendable {
    private let events: AsyncStream<Void>
    private let wakeups: AsyncStream<Void>.Continuation

    /// A loop that runs nothing until ``run(every:onTick:claim:work:)``.
    init() {
        (events, wakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the loop to claim now (work was just queued, or a slot freed).
    func wake() {
        wakeups.yield()
    }

    /// Claims every `interval` seconds and on each ``wake()``, calling `onTick` after each tick, until graceful shutdown.
    func run<Item: Sendable>(every interval: TimeInterval, onTick: @escaping @Sendable () async -> Void = {},
                             claim: @escaping @Sendable () async -> [Item], work: @escaping @Sendable (Item) async -> Void) async {
        let ticker = Task { [wakeups] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(interval))
                wakeups.yield()
                await onTick()
            }
        }
        defer { ticker.cancel() }
        await withGracefulShutdownHandler { [events, wakeups] in
            await withDiscardingTaskGroup { group in
                var iterator = events.makeAsyncIterator()
                repeat {
                    for item in await claim() {
                        group.addTask {
                            await work(item)
                            wakeups.yield()
                        }
                    }
                } while await iterator.next() != nil && !Task.isShuttingDownGracefully
            }
        } onGracefulShutdown: { [wakeups] in
            wakeups.finish()
        }
    }
}
