import Foundation
import Hummingbird
import JWS
import Logging
import Metrics
import NIOCore
import Postback
import Store
import Synchronization

/// The postback path: raw body → verifier → policy → group commit → status. Nothing else decides.
struct Ingest: Sendable {
    let verifier: PostbackVerifier
    /// The policy in force: the server's settings and the app registry's rules.
    let appRules: AppPolicyRefresher
    let writer: GroupCommitWriter
    let bodyLimit: Int
    /// Groups peers into sources for the budgets.
    let sources: SourceGrouping
    /// Rejected bodies (invalid or refused) stored whole; beyond it only their receipts are stored.
    let rejectedBodies: IntakeBudget
    /// Receipts of rejected requests stored at all; beyond it a rejected request is only counted in the metrics.
    let rejectedReceipts: IntakeBudget
    /// Unverifiable postbacks (unknown key or version) stored; beyond it they are answered 429 and not stored, and the
    /// device sends them again later.
    let unverifiable: IntakeBudget
    /// The request metrics (by route, status and outcome), the verification time, and bodies dropped over budget.
    let metrics: IngestMetrics

    /// The most bytes of a rejected body kept: enough to see what it was, never the whole of a padded one.
    static let rejectedBodyKept = 4096

    func handle(_ request: Request, context: AppRequestContext, route: IntakeRoute) async throws -> Response {
        let body: ByteBuffer
        do {
            body = try await RequestBody.collect(request, limit: bodyLimit)
        } catch let error as APIError {
            count(route, status: 413, outcome: "too_large")
            throw error
        }
        // Members Apple does not send are kept only up to a small total, so a padded body stores small.
        let bytes = PostbackBody.trimmingUnknownMembers(Array(buffer: body))
        let started = DispatchTime.now().uptimeNanoseconds
        let result = verifier.verify(bytes, expecting: route.expected)
        metrics.verifyTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        var decision = appRules.policy.decide(result)
        if decision == .keep, bytes.count > PostbackBody.unverifiableKept {
            decision = .refuse(FieldProblem(.tooLarge, field: nil,
                "a postback nobody can verify yet is kept only up to \(PostbackBody.unverifiableKept) bytes; Apple's are under 2 KB"))
        }
        var intake = Intake(receivedAt: Date(), remoteAddress: context.peer, route: route, body: bytes, result: result, decision: decision)
        let source = sources.source(of: context.remoteAddress)
        if intake.isRejected {
            // Who the body claims to be, for reconciliation; read only for rejected bodies (a stored row says it).
            intake.claimed = ClaimedIdentity.read(bytes)
        }
        // How it came, for `apps status`: a copy at the app's copy domain, a network's own postback, or forwarded.
        let app = result.postback?.app ?? intake.claimed?.app
        intake.channel = ArrivalChannel.of(route: route, host: Self.host(request), copyDomain: app.flatMap(appRules.copyDomain))
        if intake.isRejected {
            if rejectedReceipts.spend(source) != nil {
                // Over the global budget for rejected requests: answered as usual, counted, not stored.
                return try refuse(intake, route: route, context: context)
            }
            if rejectedBodies.spend(source) != nil {
                intake = intake.keepingBody(bytes: 0)
                metrics.droppedBodies.increment()
            } else if bytes.count > Self.rejectedBodyKept {
                intake = intake.keepingBody(bytes: Self.rejectedBodyKept)
            }
        } else if decision == .keep, let wait = unverifiable.spend(source) {
            count(route, status: 429, outcome: "unverifiable_over_budget")
            let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
            throw APIError(.tooManyRequests, .rateLimited,
                           "too many postbacks nobody can verify yet are arriving; retry in \(seconds) s", headers: [.retryAfter: String(seconds)])
        }
        let disposition: Disposition
        do {
            disposition = try await writer.submit(intake)
        } catch {
            context.logger.error("storage failed", metadata: ["error": "\(error)", "outcome": "\(result.outcome.rawValue)"])
            count(route, status: 500, outcome: "storage_failed")
            throw APIError(.internalServerError, .storageUnavailable, "the postback could not be stored; retry later")
        }
        if case .refuse = decision { return try refuse(intake, route: route, context: context) }
        context.logger.debug("postback stored", metadata: [
            "outcome": "\(result.outcome.rawValue)", "disposition": "\(disposition.rawValue)", "dedup_key": "\(result.postback?.dedupKey ?? "-")",
        ])
        count(route, status: 200, outcome: disposition == .stored ? result.outcome.rawValue : disposition.rawValue)
        var answer = JSONObject()
        answer.set("status", .string(disposition.rawValue))
        answer.set("outcome", .string(result.outcome.rawValue))
        if let problem = result.problem { answer.set("reason", .string(problem.reason.rawValue)) }
        if let postback = result.postback { answer.set("dedup_key", .string(postback.dedupKey)) }
        return JSONResponse.make(answer)
    }

    /// The host the request was sent to (HTTP/1.1's Host), in lower case without a port or a final dot.
    static func host(_ request: Request) -> String? {
        guard var host = request.head.authority?.lowercased() else { return nil }
        if host.hasPrefix("[") { return nil }
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        if host.hasSuffix(".") { host.removeLast() }
        return host.isEmpty ? nil : host
    }

    /// Answers a refused postback: 403 when it is Apple's but the policy refuses it, else 400.
    private func refuse(_ intake: Intake, route: IntakeRoute, context: AppRequestContext) throws -> Response {
        guard case .refuse(let problem) = intake.decision else { preconditionFailure("refuse called for an accepted postback") }
        context.logger.info("postback rejected", metadata: [
            "outcome": "\(intake.result.outcome.rawValue)", "reason": "\(problem.reason.rawValue)",
            "dedup_key": "\(intake.result.postback?.dedupKey ?? "-")",
        ])
        let status: HTTPResponse.Status = problem.reason.outcome == .verified ? .forbidden : .badRequest
        count(route, status: status.code, outcome: problem.reason.rawValue)
        throw APIError(status, problem.reason, problem.message)
    }

    private func count(_ route: IntakeRoute, status: Int, outcome: String) {
        metrics.requests(route: route, status: status, outcome: outcome).increment()
    }
}

/// The postback path's metrics, made with the application's metrics factory.
final class IngestMetrics: Sendable {
    private let factory: any MetricsFactory
    let verifyTime: Metrics.Timer
    /// Rejected bodies not stored because their source spent its budget.
    let droppedBodies: Counter
    /// Counters by (route, status, outcome), made once each: the label set is small and fixed by the reason codes.
    private let counters = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
        verifyTime = Metrics.Timer(label: "countersign_verify_seconds", dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
        droppedBodies = Counter(label: "countersign_rejected_bodies_dropped_total", factory: factory)
    }

    /// The counter of requests to `route` answered `status` with `outcome`.
    func requests(route: IntakeRoute, status: Int, outcome: String) -> Counter {
        let key = "\(route.rawValue)|\(status)|\(outcome)"
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: "countersign_postback_requests_total",
                                  dimensions: [("route", route.rawValue), ("status", String(status)), ("outcome", outcome)], factory: factory)
            counters[key] = counter
            return counter
        }
    }
}
