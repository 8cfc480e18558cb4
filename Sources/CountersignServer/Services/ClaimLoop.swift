import Foundation
import ServiceLifecycle

/// The loop the queue runners share (AdServices token exchanges, forwarding deliveries): wake on a tick or a nudge,
/// claim what is due, run each claimed item in a task of its own, and on graceful shutdown stop claiming and wait for
/// the items in flight (each bounded by its own timeout).
struct ClaimLoop: Sendable {
    private let wakeups = Wakeups()

    /// Asks the loop to claim now (work was just queued, or a slot freed).
    func wake() {
        wakeups.wake()
    }

    /// Claims every `interval` seconds and on each ``wake()``, calling `onTick` after each tick, until graceful shutdown.
    func run<Item: Sendable>(every interval: TimeInterval, onTick: @escaping @Sendable () async -> Void = {},
                             claim: @escaping @Sendable () async -> [Item], work: @escaping @Sendable (Item) async -> Void) async {
        await withGracefulShutdownHandler { [wakeups] in
            await withDiscardingTaskGroup { group in
                await wakeups.run(every: interval, onTick: onTick) {
                    guard !Task.isShuttingDownGracefully else { return false }
                    for item in await claim() {
                        group.addTask {
                            await work(item)
                            wakeups.wake()
                        }
                    }
                    return true
                }
            }
        } onGracefulShutdown: { [wakeups] in
            wakeups.finish()
        }
    }
}
