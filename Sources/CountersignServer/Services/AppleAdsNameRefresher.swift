import AdServices
import Foundation
import Logging
import ServiceLifecycle
import Store

/// Reads the names of Apple Ads campaigns, ad groups and keywords that AdServices records carry as ids, in rounds: at
/// start, then every `interval`; each round reads the names missing or older than `maximumAge`. When Apple asks to
/// slow down (429) or fails, the round stops and the next waits Apple's `Retry-After`, else a backoff that doubles
/// from a minute to an hour.
final class AppleAdsNameRefresher: Service, Sendable {
    /// How often names are read and how long one is kept.
    struct Configuration: Sendable {
        var interval: TimeInterval
        var maximumAge: TimeInterval
        var initialBackoff: TimeInterval = 60
        var maximumBackoff: TimeInterval = 3600
    }

    let store: StoreDatabase
    let client: AppleAdsNameClient
    let configuration: Configuration
    let logger: Logger

    init(store: StoreDatabase, client: AppleAdsNameClient, configuration: Configuration, logger: Logger) {
        self.store = store
        self.client = client
        self.configuration = configuration
        self.logger = logger
    }

    func run() async throws {
        var backoff = configuration.initialBackoff
        await PeriodicRounds.run { () async -> Duration in
            var wait = configuration.interval
            do throws(AppleAdsNameClient.Failure) {
                try await round()
                backoff = configuration.initialBackoff
            } catch {
                switch error {
                case .retryLater(let after):
                    wait = after ?? backoff
                    backoff = min(backoff * 2, configuration.maximumBackoff)
                    logger.warning("Apple Ads asked to wait; names are read again later", metadata: ["seconds": "\(wait)"])
                case .refused(let reason):
                    logger.error("Apple Ads names cannot be read", metadata: ["reason": "\(reason)"])
                }
            }
            return .seconds(wait)
        }
    }

    /// Reads every wanted name, a hundred of each kind at a time, until none is missing.
    private func round() async throws(AppleAdsNameClient.Failure) {
        await client.startRound()
        while !Task.isShuttingDownGracefully {
            let wanted: [AppleAdsAPI.Entity]
            do { wanted = try await store.appleAdsNames.wanted(fetchedBefore: Date().addingTimeInterval(-configuration.maximumAge), limit: 100) } catch {
                logger.error("cannot list Apple Ads ids without names", metadata: ["error": "\(error)"])
                return
            }
            guard !wanted.isEmpty else { return }
            for entity in wanted {
                let (name, source) = try await client.name(of: entity)
                do { try await store.appleAdsNames.record(entity, name: name, source: source) } catch {
                    logger.error("cannot store an Apple Ads name", metadata: ["error": "\(error)"])
                    return
                }
            }
        }
    }
}
