import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Store
import Synchronization

/// Delivers the forwarding outbox to partners: each entry's body (Apple's byte for byte, or as the rule's template makes
/// it) POSTed to its rule's URL with the postback's dedup key as `Idempotency-Key` and the rule's header, retried by ``ForwardingSchedule`` until its deadline, then dead.
///
/// Every receiver runs one; they share the outbox. Entries are claimed per partner within the partner's concurrency and
/// rate (``ForwardingOutbox/claim(partner:limit:now:)``), so a partner that is slow or down holds only its own slots and
/// delays nobody else. A 2xx answer is a delivery; anything else (another status, a timeout, a refused connection) is
/// retried. Redirects are not followed: a partner that moved gets its URL changed by the operator.
final class Forwarder: Service, Sendable {
    let store: StoreDatabase
    let schedule: ForwardingSchedule
    let logger: Logger
    private let metrics: any MetricsFactory
    private let loop = ClaimLoop()
    /// Records the partners' 2xx answers, those that arrive together in one transaction.
    private let recorder: DeliveryRecorder
    /// Deliveries in flight from this receiver, per partner.
    private let inFlight = Mutex<[String: Int]>([:])
    /// When this receiver last claimed for each partner.
    private let lastClaim = Mutex<[String: Date]>([:])

    init(store: StoreDatabase, schedule: ForwardingSchedule, logger: Logger, metrics: any MetricsFactory) {
        self.store = store
        self.schedule = schedule
        self.logger = logger
        self.metrics = metrics
        recorder = DeliveryRecorder(outbox: store.forwarding, metrics: metrics)
    }

    /// How often the outbox is looked at: a quarter of the first backoff, between 20 ms and 250 ms.
    var pollInterval: TimeInterval { max(0.02, min(0.25, schedule.initialBackoff / 4)) }

    /// How often the per-partner gauges are read from the database (a count over the outbox).
    static let gaugeInterval: TimeInterval = 10
    /// How often the rules' entries are counted against their limits: a rule takes at most this long of traffic beyond
    /// its `max_entries` before it is marked full.
    static let capacityInterval: TimeInterval = 2

    func run() async throws {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 256
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let lastGauges = Mutex(Date.distantPast), lastCapacity = Mutex(Date.distantPast)
        await loop.run(every: pollInterval, onTick: {
            if Self.due(lastCapacity, every: Self.capacityInterval) { await self.checkCapacity() }
            if Self.due(lastGauges, every: Self.gaugeInterval) { await self.updateGauges() }
        }, claim: claimDue) { delivery in
            await self.deliver(delivery, client: client)
            self.inFlight.withLock { $0[delivery.partner, default: 1] -= 1 }
        }
        try? await client.shutdown()
    }

    /// Whether `interval` has passed since `last`, which then becomes now.
    private static func due(_ last: borrowing Mutex<Date>, every interval: TimeInterval) -> Bool {
        last.withLock { last in
            guard Date().timeIntervalSince(last) >= interval else { return false }
            last = Date()
            return true
        }
    }

    /// Claims what is due for every partner with a free slot here; a partner whose claim fails is skipped this round,
    /// and what the others claimed is delivered.
    private func claimDue() async -> [ForwardDelivery] {
        let now = Date()
        let queues: [ForwardingOutbox.Queue]
        do { queues = try await store.forwarding.queues(now: now) } catch {
            logger.error("cannot read the forwarding queues", metadata: ["error": "\(error)"])
            return []
        }
        var claimed: [ForwardDelivery] = []
        for queue in queues {
            guard let due = queue.nextDue, due <= now else { continue }
            let free = queue.concurrency - inFlight.withLock { $0[queue.partner, default: 0] }
            guard free > 0 else { continue }
            // Each delivery that ends wakes the loop; a claim for every freed slot would cost a claim (and an enriched
            // template's read) per delivery. A partner's slots are claimed once half of them are free, or a poll
            // interval after its last claim, so a slow partner still keeps its slots busy.
            let waited = lastClaim.withLock { now.timeIntervalSince($0[queue.partner] ?? .distantPast) >= pollInterval }
            guard free * 2 >= queue.concurrency || waited else { continue }
            lastClaim.withLock { $0[queue.partner] = now }
            do {
                let deliveries = try await store.forwarding.claim(partner: queue.partner, limit: free, now: now)
                inFlight.withLock { $0[queue.partner, default: 0] += deliveries.count }
                claimed += deliveries
            } catch {
                logger.error("cannot claim forwarding entries", metadata: ["partner": "\(queue.partner)", "error": "\(error)"])
            }
        }
        return claimed
    }

    /// One attempt for one claimed entry, and its outcome recorded.
    func deliver(_ delivery: ForwardDelivery, client: HTTPClient) async {
        let started = DispatchTime.now().uptimeNanoseconds
        let sent = await PartnerRequest.send(delivery, client: client)
        let (answer, failure, retryAfter) = (sent.label, sent.failure, sent.retryAfter)
        Metrics.Timer(label: "countersign_forward_seconds", dimensions: [("partner", delivery.partner)], preferredDisplayUnit: .seconds, factory: metrics)
            .recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        Counter(label: "countersign_forward_attempts_total", dimensions: [("partner", delivery.partner), ("answer", answer)], factory: metrics).increment()
        do {
            guard let failure else {
                if try await recorder.delivered(delivery) {
                    Counter(label: "countersign_forward_delivered_total", dimensions: [("partner", delivery.partner)], factory: metrics).increment()
                }
                return
            }
            let decision = schedule.afterFailure(attempt: delivery.attempts + 1, now: Date(), deadline: delivery.deadline,
                                                 retryAfter: retryAfter, jitter: Double.random(in: 0..<1))
            if decision == .dead {
                Counter(label: "countersign_forward_dead_total", dimensions: [("partner", delivery.partner)], factory: metrics).increment()
                logger.warning("forwarding gave up; the entry is a dead letter", metadata: [
                    "partner": "\(delivery.partner)", "entry": "\(delivery.id)", "attempts": "\(delivery.attempts + 1)", "error": "\(failure)",
                ])
            }
            try await store.forwarding.failed(delivery, answer: answer, error: failure, decision: decision)
        } catch {
            // The claim lapses and the entry is delivered again, with the same idempotency key.
            logger.error("cannot record a forwarding attempt", metadata: ["entry": "\(delivery.id)", "error": "\(error)"])
        }
    }

    /// Marks rules full or not as their entries reach their limit, and sets `countersign_forward_full` per partner.
    private func checkCapacity() async {
        do {
            for change in try await store.forwarding.checkCapacity() {
                Gauge(label: "countersign_forward_full", dimensions: [("partner", change.partner)], factory: metrics).record(change.full ? 1 : 0)
                if change.full {
                    logger.warning("a forwarding rule is full: new postbacks are not queued for it until it has room", metadata: [
                        "partner": "\(change.partner)", "entries": "\(change.entries)",
                        "then": "countersign forward backfill \(change.partner) --since \(change.fullSince ?? "")",
                    ])
                } else {
                    logger.notice("a forwarding rule has room again; backfill what it missed", metadata: [
                        "partner": "\(change.partner)", "run": "countersign forward backfill \(change.partner) --since \(change.fullSince ?? "")",
                    ])
                }
            }
        } catch {
            logger.error("cannot check the forwarding rules' limits", metadata: ["error": "\(error)"])
        }
    }

    /// Sets `countersign_forward_pending` and `countersign_forward_dead` per partner.
    private func updateGauges() async {
        guard let status = try? await store.forwarding.status() else { return }
        guard let partner = status.columns.firstIndex(of: "partner"), let pending = status.columns.firstIndex(of: "pending"),
              let dead = status.columns.firstIndex(of: "dead") else { return }
        for row in status.rows {
            guard case .string(let name) = row[partner] else { continue }
            if case .number(let value) = row[pending] { Gauge(label: "countersign_forward_pending", dimensions: [("partner", name)], factory: metrics).record(Double(value) ?? 0) }
            if case .number(let value) = row[dead] { Gauge(label: "countersign_forward_dead", dimensions: [("partner", name)], factory: metrics).record(Double(value) ?? 0) }
        }
    }
}
