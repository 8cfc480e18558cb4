import Foundation
import AdServices
import Hummingbird
import JWS
import Postback
import Store

/// Apple Ads: `POST /v1/adservices/tokens` and `POST /v1/iad/attribution` (from apps); `GET /v1/adservices/records`,
/// `/jobs` and `/report` (analysts and operators, API key).
enum AppleAdsRoutes {
    /// A token is at most 8 KB of base64 and an iAd dictionary a few hundred bytes; nothing larger is read.
    static let maximumBody = 16 * 1024

    /// Routes apps call; like postbacks they carry no API key, so each source address is rate-limited and the token
    /// queue is bounded.
    static func addPublic(to router: Router<AppRequestContext>, store: StoreDatabase, tokenExchange: TokenExchangeRunner,
                          limiter: SourceRateLimiter, sources: SourceGrouping, records: IntakeBudget, maximumQueue: Int) {
        router.post("/v1/adservices/tokens") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            try limit(limiter, sources.source(of: context.remoteAddress))
            let bytes = try await collect(request)
            let submission: TokenSubmission
            switch TokenSubmission.parse(bytes, contentType: request.headers[.contentType]) {
            case .success(let parsed): submission = parsed
            case .failure(let problem): throw APIError(.badRequest, .invalidToken, problem.description)
            }
            if let problem = submission.problem(now: Date()) { throw APIError(.badRequest, .invalidToken, problem.description) }
            try spend(records, sources.source(of: context.remoteAddress))
            let job: EnqueuedTokenJob
            do {
                switch try await store.tokenJobs.enqueue(submission, maximumOpen: maximumQueue) {
                case .queued(let queued): job = queued
                case .queueFull:
                    throw APIError(.serviceUnavailable, .queueFull, "\(maximumQueue) tokens are waiting; retry later", headers: [.retryAfter: "60"])
                }
            } catch let error as APIError {
                throw error
            } catch {
                throw APIError(.internalServerError, .storageUnavailable, "the token could not be stored; retry later")
            }
            if job.isNew { tokenExchange.wake() }
            return JSONResponse.make(status: job.isNew ? .accepted : .ok, JSONObject([
                JSONMember(key: "status", value: .string(job.isNew ? "accepted" : "known")),
                JSONMember(key: "job", value: .number(String(job.id))),
                JSONMember(key: "state", value: .string(job.state.rawValue)),
            ]))
        }
        router.post("/v1/iad/attribution") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["app", "install_id"])
            try limit(limiter, sources.source(of: context.remoteAddress))
            let bytes = try await collect(request)
            let record: AttributionRecord
            switch IAdDictionary.normalise(bytes) {
            case .success(let normalised): record = normalised
            case .failure(let problem): throw APIError(.badRequest, .invalidIAdDictionary, problem.description)
            }
            let parameters = request.uri.queryParameters
            let app = try QueryParameters.app(request)
            if let installID = parameters.get("install_id"), installID.isEmpty || installID.unicodeScalars.count > 256 || LabelText.hasRefused(installID) {
                throw APIError(.badRequest, .badParameter, "install_id: must be 1 to 256 characters without \(LabelText.refusedKinds)")
            }
            try spend(records, sources.source(of: context.remoteAddress))
            let stored: StoredAttribution
            do {
                stored = try await store.attributions.storeClientReported(record, app: app, installID: parameters.get("install_id"),
                                                                          body: IAdDictionary.keptBody(bytes))
            } catch {
                throw APIError(.internalServerError, .storageUnavailable, "the record could not be stored; retry later")
            }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "status", value: .string(stored.isNew ? "stored" : "duplicate")),
                JSONMember(key: "id", value: .number(String(stored.id))),
                JSONMember(key: "attribution", value: .bool(record.attribution)),
                JSONMember(key: "reported_by", value: .string("client")),
            ]))
        }
    }

    /// 429 `rate_limited` with `Retry-After` when the caller's address has used its share.
    static func limit(_ limiter: SourceRateLimiter, _ source: String) throws {
        guard let wait = limiter.acquire(source) else { return }
        throw tooMany("too many requests from this address", wait)
    }

    /// 429 `rate_limited` when the source, or every source together, has stored its share of records a minute.
    static func spend(_ budget: IntakeBudget, _ source: String) throws {
        guard let wait = budget.spend(source) else { return }
        throw tooMany("too many submissions stored from this address, or from all", wait)
    }

    static func tooMany(_ what: String, _ wait: Duration) -> APIError {
        let seconds = max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
        return APIError(.tooManyRequests, .rateLimited, "\(what); retry in \(seconds) s", headers: [.retryAfter: String(seconds)])
    }

    static func collect(_ request: Request) async throws -> [UInt8] {
        Array(buffer: try await RequestBody.collect(request, limit: maximumBody))
    }

    /// Routes for analysts, inside the API-key group.
    static func addPrivate(to api: PrivateAPI, store: StoreDatabase) {
        api.read.get("adservices/records") { request, context in
            try context.requireEveryApp("the Apple Ads record listing")
            try QueryParameters.refuseUnknown(request, allowed: ["limit", "after", "format"])
            let format = try QueryParameters.format(request)
            let limit = try QueryParameters.limit(request, default: 1000)
            let after = try QueryParameters.after(request, what: "record")
            let table = try await store.attributions.records(after: after, limit: limit)
            let next: JSONValue = table.rows.count == limit ? (table.rows.last?.first ?? .null) : .null
            return JSONResponse.make(text: format.render(table, extra: [JSONMember(key: "next_after", value: next)]), contentType: format.contentType)
        }
        api.read.get("adservices/jobs") { request, context in
            try context.requireEveryApp("the AdServices job listing")
            try QueryParameters.refuseUnknown(request, allowed: ["state", "limit", "format", "order"])
            var states: [TokenJobState] = [.pending, .retrying, .failed]
            if let list = request.uri.queryParameters.get("state") {
                states = try list.split(separator: ",").map { name in
                    guard let state = TokenJobState(rawValue: String(name)) else {
                        throw APIError(.badRequest, .badParameter, "state: must be pending, retrying, done or failed (comma-separated)")
                    }
                    return state
                }
            }
            let format = try QueryParameters.format(request)
            let limit = try QueryParameters.limit(request, default: 100)
            let counts = try await store.tokenJobs.counts()
            let order = request.uri.queryParameters.get("order") ?? "oldest"
            guard ["oldest", "newest"].contains(order) else { throw APIError(.badRequest, .badParameter, "order: must be oldest or newest") }
            let jobs = try await store.tokenJobs.list(states: states, limit: limit, newestFirst: order == "newest")
            return JSONResponse.make(text: format.render(jobs, extra: [TokenJobState.countsMember(counts)]),
                                     contentType: format.contentType)
        }
        api.read.get("adservices/report") { request, context in
            let parameters = request.uri.queryParameters
            try context.requireApp(parameters.get("app").flatMap(AppID.init))
            let query: AttributionReportQuery
            do throws(QueryProblem) {
                query = try AttributionReportQuery.parse(parameters.map { (String($0.key), String($0.value)) }, extraAllowed: ["format"])
            } catch {
                throw APIError(.badRequest, .badParameter, error.description)
            }
            let format = try QueryParameters.format(request)
            let table = try await store.attributions.report(query)
            return JSONResponse.make(text: format.render(table), contentType: format.contentType,
                                     headers: [.init("Countersign-Time-Zone")!: query.timeZone.identifier])
        }
    }
}
