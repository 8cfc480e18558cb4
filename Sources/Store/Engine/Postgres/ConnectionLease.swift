import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

/// A connection leased from `PostgresClient`, whose leases are async closures, to a thread that blocks: a task takes
/// the lease and hands the connection over, then waits until the thread gives it back.
final class ConnectionLease: @unchecked Sendable {
    private enum State {
        case waiting
        case leased(PostgresConnection, CheckedContinuation<Void, Never>)
        case failed(any Error)
        case abandoned
        case returned
    }

    private let state = NIOLockedValueBox<State>(.waiting)
    private let arrived = DispatchSemaphore(value: 0)
    /// The leased connection.
    private(set) var connection: PostgresConnection!

    /// Waits up to `seconds` for a connection (less while PostgreSQL is unreachable, ``PoolUse``), asked for once the
    /// client runs (`started`); past that the lease is abandoned and ``PoolUse/gaveNothing(within:since:)`` says why.
    init(client: PostgresClient, started: StopSignal, within seconds: TimeInterval, use: PoolUse) throws {
        // High priority: a commit thread waits for this task, and under load the cooperative pool is full of requests.
        let task = Task(priority: .high) { [state, arrived] in
            do {
                // The client has no connection to give before its `run()`; asked for earlier, the lease would wait all the same.
                await started.wait()
                try await client.withConnection { connection in
                    await use.holding {
                        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                            let handed = state.withLockedValue { state -> Bool in
                                guard case .waiting = state else { return false }
                                state = .leased(connection, continuation)
                                return true
                            }
                            if handed { arrived.signal() } else { continuation.resume() }
                        }
                    }
                }
            } catch {
                let told = state.withLockedValue { state -> Bool in
                    guard case .waiting = state else { return false }
                    state = .failed(error)
                    return true
                }
                if told { arrived.signal() }
            }
        }
        let (wait, givenBefore) = use.waiting(normally: seconds)
        if arrived.wait(timeout: .now() + wait) == .timedOut {
            let gaveUp = state.withLockedValue { state -> Bool in
                guard case .waiting = state else { return false }
                state = .abandoned
                return true
            }
            if gaveUp {
                task.cancel()
                throw use.gaveNothing(within: wait, since: givenBefore)
            }
            arrived.wait()
        }
        switch state.withLockedValue({ $0 }) {
        case .leased(let connection, _): self.connection = connection
        case .failed(let error): throw error
        case .waiting, .abandoned, .returned: throw PostgresEngineError.closed
        }
    }

    /// Gives the connection back to the client.
    func release() {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard case .leased(_, let continuation) = state else { return nil }
            state = .returned
            return continuation
        }
        continuation?.resume()
    }
}
