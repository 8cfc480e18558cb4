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
    /// The bodies of rejected requests each source may have stored a minute; beyond it only their receipts are stored.
    let rejectedBodies: SourceRateLimiter
    let verifyTime = Metrics.Timer(label: "countersign_verify_seconds", preferredDisplayUnit: .seconds)

    /// Which family a route takes; `nil` takes either.
    enum Route: String {
        case aak, skan, any

        var expected: PostbackProtocol? {
            switch self {
            case .aak: .aak
            case .skan: .skan
            case .any: nil
            }
        }
    }

    func handle(_ request: Request, context: AppRequestContext, route: Route) async throws -> Response {
        let body: ByteBuffer
        do {
            body = try await RequestBody.collect(request, limit: bodyLimit)
        } catch let error as APIError {
            count(route, status: 413, outcome: "too_large")
            throw error
        }
        let bytes = Array(buffer: body)
        let started = DispatchTime.now().uptimeNanoseconds
        let result = verifier.verify(bytes, expecting: route.expected)
        verifyTime.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        let decision = appRules.policy.decide(result)
        var intake = Intake(receivedAt: Date(), remoteAddress: context.peer, route: route.rawValue, body: bytes, result: result, decision: decision)
        if intake.isRejected, rejectedBodies.rate == 0 || rejectedBodies.acquire(context.remoteAddress?.ipAddress ?? "unknown") != nil {
            intake = intake.droppingBody()
            Self.droppedBodies.increment()
        }
        let disposition: Disposition
        do {
            disposition = try await writer.submit(intake)
        } catch {
            context.logger.error("storage failed", metadata: ["error": "\(error)", "outcome": "\(result.outcome.rawValue)"])
            count(route, status: 500, outcome: "storage_failed")
            throw APIError(.internalServerError, .storageUnavailable, "the postback could not be stored; retry later")
        }
        if case .refuse(let problem) = decision {
            context.logger.info("postback rejected", metadata: [
                "outcome": "\(result.outcome.rawValue)", "reason": "\(problem.reason.rawValue)",
                "dedup_key": "\(result.postback?.dedupKey ?? "-")",
            ])
            let status: HTTPResponse.Status = problem.reason.outcome == .verified ? .forbidden : .badRequest
            count(route, status: status.code, outcome: problem.reason.rawValue)
            throw APIError(status, problem.reason, problem.message)
        }
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

    /// Rejected bodies not stored because their source spent its budget.
    private static let droppedBodies = Counter(label: "countersign_rejected_bodies_dropped_total")

    /// Counters by (route, status, outcome), made once each: the label set is small and fixed by the reason codes.
    private static let counters = Mutex<[String: Counter]>([:])

    private func count(_ route: Route, status: Int, outcome: String) {
        let key = "\(route.rawValue)|\(status)|\(outcome)"
        let counter = Self.counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: "countersign_postback_requests_total",
                                  dimensions: [("route", route.rawValue), ("status", String(status)), ("outcome", outcome)])
            counters[key] = counter
            return counter
        }
        counter.increment()
    }
}
