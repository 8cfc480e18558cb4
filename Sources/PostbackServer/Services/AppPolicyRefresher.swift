import Foundation
import Logging
import Postback
import ServiceLifecycle
import Store
import Synchronization

/// The app registry's rules as this receiver applies them at ingest: read when the server starts, again every
/// `interval` (a change made through another receiver or the CLI applies here within it) and at once after a change
/// through this receiver's API.
final class AppPolicyRefresher: Service, Sendable {
    let store: StoreDatabase
    let interval: TimeInterval
    let logger: Logger
    private let current: Mutex<[Int64: TrustPolicy.AppRule]?>

    /// Reads the registry now, so no postback is judged before it is known.
    init(store: StoreDatabase, interval: TimeInterval = 5, logger: Logger) throws {
        self.store = store
        self.interval = interval
        self.logger = logger
        current = Mutex(try store.apps.rulesAtStart())
    }

    /// `policy` with the registry's rules.
    func applied(to policy: TrustPolicy) -> TrustPolicy {
        var policy = policy
        policy.apps = current.withLock { $0 }
        return policy
    }

    /// Reads the registry again.
    func refresh() async throws {
        let rules = try await store.apps.rules()
        current.withLock { $0 = rules }
    }

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: .seconds(interval)) }
            do { try await refresh() } catch { logger.error("cannot read the app registry", metadata: ["error": "\(error)"]) }
        }
    }
}
