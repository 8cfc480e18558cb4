import Foundation
import Logging
import Metrics
import Postback
import ServiceLifecycle
import Store
import Synchronization

/// The trust policy this receiver applies: the server's settings with the app registry's rules, read when the server
/// starts, again every `interval` (a change made through another receiver or the CLI applies here within it) and at
/// once after a change through this receiver's API.
///
/// When the rules change, stored postbacks are counted again under them (``CountingRules``) in the background: at the
/// first round after the change, and once more a round later for postbacks other receivers stored with the old rules
/// while the change reached them. At start it applies the rules once, for changes made while it was stopped.
final class AppPolicyRefresher: Service, Sendable {
    let store: StoreDatabase
    let interval: TimeInterval
    let logger: Logger
    /// The server's own settings, before the registry.
    let base: TrustPolicy
    private let current: Mutex<[AppID: TrustPolicy.AppRule]?>
    private let domains: Mutex<[AppID: String]>
    /// Starts rounds: every `interval`, and at once after a change through this receiver.
    private let wakeups = Wakeups()
    private let recounted: Counter

    /// Reads the registry now, so no postback is judged before it is known.
    init(store: StoreDatabase, base: TrustPolicy, interval: TimeInterval = 5, logger: Logger, metrics: any MetricsFactory) async throws {
        self.store = store
        recounted = Counter(label: "countersign_recounted_postbacks_total", factory: metrics)
        self.base = base
        self.interval = interval
        self.logger = logger
        current = Mutex(try await store.apps.rules())
        domains = Mutex(try await store.apps.copyDomains())
    }

    /// The policy in force: the server's settings with the registry's rules.
    var policy: TrustPolicy {
        var policy = base
        policy.apps = current.withLock { $0 }
        return policy
    }

    /// The copy domain registered for `app`, if any: where its developer copies arrive.
    func copyDomain(app: AppID) -> String? {
        domains.withLock { $0[app] }
    }

    /// Reads the registry again.
    func refresh() async throws {
        let rules = try await store.apps.rules()
        let copyDomains = try await store.apps.copyDomains()
        current.withLock { $0 = rules }
        domains.withLock { $0 = copyDomains }
    }

    /// Reads the registry at once after a change through this receiver, and starts a round that counts stored
    /// postbacks under the new rules (in the background: the request does not wait for it).
    func registryChanged() async throws {
        try await refresh()
        wakeups.wake()
    }

    func run() async throws {
        // Graceful shutdown cancels the rounds; that is their normal end, not a failure.
        try? await cancelWhenGracefulShutdown { [self] in try await rounds() }
    }

    /// A round at start, then one each time the timer or a change wakes it; ends when cancelled.
    private func rounds() async throws {
        var roundsToRecount = 1
        var countedWith = current.withLock { $0 }
        var first = true
        try await wakeups.run(every: interval) {
            if !first {
                do { try await refresh() } catch { logger.error("cannot read the app registry", metadata: ["error": "\(error)"]) }
            }
            first = false
            try Task.checkCancellation()
            let rules = current.withLock { $0 }
            if rules != countedWith {
                countedWith = rules
                roundsToRecount = 2
            }
            if roundsToRecount > 0 {
                do {
                    let changed = try await store.counting.apply(policy)
                    recounted.increment(by: changed)
                    if changed > 0 { logger.notice("counted stored postbacks again under the app registry's rules", metadata: ["changed": "\(changed)"]) }
                    roundsToRecount -= 1
                } catch {
                    logger.error("cannot apply the app registry's rules to stored postbacks", metadata: ["error": "\(error)"])
                }
            }
            return true
        }
    }
}
