import NIOConcurrencyHelpers

/// A one-shot signal: the one that ends ``PostgresEngine/run()`` (and SQLite's) when the store closes, and the one that
/// tells PostgreSQL's readers the pool runs.
final class StopSignal: Sendable {
    private struct State {
        var fired = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// Whether ``fire()`` was called.
    var isFired: Bool { state.withLockedValue { $0.fired } }

    /// Wakes every waiter, now and later.
    func fire() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``fire()`` was called, or when the waiting task is cancelled.
    func wait() async {
        let id = state.withLockedValue { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLockedValue { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
