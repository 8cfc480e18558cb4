import CMalloc
import Logging
import ServiceLifecycle
import Store
import Synchronization

/// Gives the memory of finished heavy requests back to the system. glibc's allocator keeps what a large export or
/// report freed in its arenas, so the process stayed at 1.4-2.3 GB while idle after large requests (trust round 4,
/// finding 10). Every `interval`, when a heavy request (``HeavyRequestLimiter``) has finished since the last trim and
/// none runs now, it calls glibc's `malloc_trim` on the store's thread pool (it walks every arena and can take a few
/// milliseconds; it never runs on Swift's cooperative pool). Elsewhere than glibc the trim does nothing.
final class MemoryTrimmer: Service, Sendable {
    let limiters: [HeavyRequestLimiter]
    /// Time between looks.
    let interval: Duration
    let logger: Logger
    private let trim: @Sendable () -> Void
    /// The heavy requests finished at the last trim.
    private let finishedAtTrim = Mutex(0)

    /// A trimmer watching `limiters`; `trim` gives memory back (glibc's `malloc_trim(0)`; tests count calls).
    init(limiters: [HeavyRequestLimiter], interval: Duration = .seconds(15), logger: Logger,
         trim: @escaping @Sendable () -> Void = { SystemAllocator.trim() }) {
        self.limiters = limiters
        self.interval = interval
        self.logger = logger
        self.trim = trim
    }

    func run() async throws {
        await PeriodicRounds.run(pausingFirst: interval) {
            await round()
            return interval
        }
    }

    /// One look: trims when a heavy request has finished since the last trim and none runs now. Returns whether it
    /// trimmed.
    @discardableResult
    func round() async -> Bool {
        let running = limiters.reduce(0) { $0 + $1.inFlight }
        let finished = limiters.reduce(0) { $0 + $1.finished }
        guard running == 0 else { return false }
        let due: Bool = finishedAtTrim.withLock { last in
            guard finished != last else { return false }
            last = finished
            return true
        }
        guard due else { return false }
        do {
            try await Blocking.run(trim)
            logger.debug("gave freed memory back after heavy requests", metadata: ["finished": "\(finished)"])
        } catch {
            logger.warning("cannot give freed memory back", metadata: ["error": "\(error)"])
        }
        return true
    }
}

/// glibc's allocator, through the CMalloc target; nothing on other C libraries.
package enum SystemAllocator {
    /// Sets the allocator for a server (`cm_tune`: at most 4 arenas, blocks of 1 MiB and more mapped apart, the heap's
    /// top trimmed past 8 MiB free); `serve` calls it first, before the server's threads start.
    package static func tune() {
        cm_tune()
    }

    /// Gives freed memory back to the system (`cm_trim`: glibc's `malloc_trim(0)`).
    static func trim() {
        _ = cm_trim()
    }
}
