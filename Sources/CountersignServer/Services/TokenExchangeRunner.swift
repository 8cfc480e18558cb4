import AdServices
import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import Store
import Synchronization

/// Exchanges queued AdServices tokens with Apple's attribution API, by Apple's rules (``RetryPolicy``).
///
/// Jobs live in the database (SQLite or PostgreSQL), so they survive restarts. Each attempt first claims its job with a lease, so one token is never
/// exchanged twice at once, and the record is stored in the same transaction that closes the job.
final class TokenExchangeRunner: Service, Sendable {
    /// Where Apple's API is and how the exchange is paced.
    struct Configuration: Sendable {
        /// The URL the token is POSTed to (Apple's: https://api-adservices.apple.com/api/v1/).
        var url: String
        var policy: RetryPolicy
        /// Exchanges in flight at most.
        var concurrency: Int
    }

    let store: StoreDatabase
    let configuration: Configuration
    let logger: Logger
    private let client: HTTPClient
    private let metrics: any MetricsFactory
    private let loop = ClaimLoop()
    private let inFlight = Mutex(0)

    init(store: StoreDatabase, configuration: Configuration, logger: Logger, metrics: any MetricsFactory, client: HTTPClient = .shared) {
        self.store = store
        self.metrics = metrics
        self.configuration = configuration
        self.logger = logger
        self.client = client
    }

    /// Asks the runner to look for due jobs now (a token was just queued).
    func wake() {
        loop.wake()
    }

    /// How often due jobs are looked for between wake-ups: a quarter of the shortest retry delay, at most 250 ms.
    var pollInterval: TimeInterval {
        max(0.005, min(0.25, configuration.policy.notFoundInterval / 4, configuration.policy.initialBackoff / 4))
    }

    func run() async throws {
        await loop.run(every: pollInterval, claim: claimDueJobs) { job in
            await self.exchange(job)
            self.inFlight.withLock { $0 -= 1 }
        }
    }

    private func claimDueJobs() async -> [TokenJob] {
        let free = configuration.concurrency - inFlight.withLock { $0 }
        guard free > 0 else { return [] }
        do {
            // A read first, so an idle queue never takes the writer.
            guard let due = try await store.tokenJobs.nextDue(), due <= Date() else { return [] }
            // The lease outlives the request timeout, so a claim only lapses when its holder died.
            let jobs = try await store.tokenJobs.claimDue(now: Date(), limit: free, lease: configuration.policy.requestTimeout + 30)
            inFlight.withLock { $0 += jobs.count }
            return jobs
        } catch {
            logger.error("cannot claim AdServices jobs", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// One attempt for one claimed job, and its outcome recorded.
    func exchange(_ job: TokenJob) async {
        let policy = configuration.policy
        guard Date().timeIntervalSince(job.tokenCreatedAt) < policy.tokenLifetime else {
            await finish(job, label: nil, answer: nil, update: .fail(.tokenExpired))
            return
        }
        var request = HTTPClientRequest(url: configuration.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "text/plain")
        request.body = .bytes(ByteBuffer(string: job.token))
        var answer = RetryPolicy.Answer.networkError
        var label = "network"
        var body: [UInt8] = []
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(policy.requestTimeout * 1000)))
            body = Array(buffer: try await response.body.collect(upTo: 1 << 20))
            answer = .status(Int(response.status.code))
            label = String(response.status.code)
        } catch {
            logger.warning("AdServices request failed", metadata: ["job": "\(job.id)", "error": "\(error)"])
        }
        var record: AttributionRecord?
        if answer == .status(200) {
            switch AttributionRecord.decode(adServicesResponse: body) {
            case .success(let decoded): record = decoded
            case .failure(let problem):
                // An unreadable 200 (a proxy page, a truncated body) is retried like a server failure.
                logger.warning("unreadable AdServices record", metadata: ["job": "\(job.id)", "problem": "\(problem)"])
                answer = .networkError
                label = "200-unreadable"
            }
        }
        let decision = policy.decide(
            answer, attempts: job.attempts + 1,
            notFoundAnswers: job.notFoundAnswers + (RetryPolicy.isNotFound(answer) ? 1 : 0),
            serverFailures: job.serverFailures + (RetryPolicy.isServerFailure(answer) ? 1 : 0),
            tokenAge: Date().timeIntervalSince(job.tokenCreatedAt)
        )
        let update: TokenJobUpdate = switch (decision, record) {
        case (.store, let record?): .store(record, body: body)
        // Not reached: a 200 without a readable record was turned into a retryable answer above.
        case (.store, nil): .fail(.unreadableRecord)
        case (.retry(let delay), _): .retry(after: delay)
        case (.fail(let reason), _): .fail(reason)
        }
        await finish(job, label: label, answer: answer, update: update)
    }

    /// Records the outcome; `answer` is nil when no request was made (the token had expired).
    private func finish(_ job: TokenJob, label: String?, answer: RetryPolicy.Answer?, update: TokenJobUpdate) async {
        Counter(label: "countersign_adservices_attempts_total", dimensions: [("answer", label ?? "none")], factory: metrics).increment()
        do {
            let recorded = try await store.tokenJobs.finishAttempt(
                job, answer: label, notFound: answer.map(RetryPolicy.isNotFound) ?? false,
                serverFailure: answer.map(RetryPolicy.isServerFailure) ?? false, update: update
            )
            if !recorded { logger.warning("AdServices job claim lost; outcome dropped", metadata: ["job": "\(job.id)"]) }
        } catch {
            // The claim lapses and the job is tried again; the record is still stored at most once.
            logger.error("cannot record AdServices attempt", metadata: ["job": "\(job.id)", "error": "\(error)"])
        }
    }
}
