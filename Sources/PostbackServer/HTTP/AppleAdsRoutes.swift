import AdServices
import Hummingbird
import JWS
import Store

/// Apple Ads: `POST /v1/adservices/tokens` and `POST /v1/iad/attribution` (from apps); `GET /v1/adservices/records`,
/// `/jobs` and `/report` (analysts and operators, API key).
enum AppleAdsRoutes {
    static let maximumBody = 64 * 1024

    /// Routes apps call; like postbacks they carry no API key.
    static func addPublic(to router: Router<AppRequestContext>, store: PostbackStore, tokenExchange: TokenExchangeRunner) {
        router.post("/v1/adservices/tokens") { request, _ in
            let bytes = try await collect(request)
            let submission: TokenSubmission
            switch TokenSubmission.parse(bytes, contentType: request.headers[.contentType]) {
            case .success(let parsed): submission = parsed
            case .failure(let problem): throw APIError(.badRequest, "invalid_token", problem.description)
            }
            let job: EnqueuedTokenJob
            do {
                job = try await store.enqueueToken(submission)
            } catch {
                throw APIError(.internalServerError, "storage_unavailable", "the token could not be stored; retry later")
            }
            if job.isNew { tokenExchange.wake() }
            return JSONResponse.make(status: job.isNew ? .accepted : .ok, JSONObject([
                JSONMember(key: "status", value: .string(job.isNew ? "accepted" : "known")),
                JSONMember(key: "job", value: .number(String(job.id))),
                JSONMember(key: "state", value: .string(job.state.rawValue)),
            ]))
        }
        router.post("/v1/iad/attribution") { request, _ in
            let bytes = try await collect(request)
            let record: AttributionRecord
            switch IAdDictionary.normalise(bytes) {
            case .success(let normalised): record = normalised
            case .failure(let problem): throw APIError(.badRequest, "invalid_iad_dictionary", problem.description)
            }
            let parameters = request.uri.queryParameters
            let id: Int64
            do {
                id = try await store.storeAttribution(record, app: parameters.get("app"), installID: parameters.get("install_id"), body: bytes)
            } catch {
                throw APIError(.internalServerError, "storage_unavailable", "the record could not be stored; retry later")
            }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "status", value: .string("stored")),
                JSONMember(key: "id", value: .number(String(id))),
                JSONMember(key: "attribution", value: .bool(record.attribution)),
            ]))
        }
    }

    static func collect(_ request: Request) async throws -> [UInt8] {
        do {
            return Array(buffer: try await request.body.collect(upTo: maximumBody))
        } catch {
            throw APIError(.contentTooLarge, "payload_too_large", "the body is larger than \(maximumBody) bytes")
        }
    }

    /// Routes for analysts, inside the API-key group.
    static func addPrivate(to group: RouterGroup<AppRequestContext>, store: PostbackStore) {
        group.get("adservices/records") { request, _ in
            try QueryParameters.refuseUnknown(request, allowed: ["limit", "after", "format"])
            let format = try QueryParameters.format(request)
            let limit = try QueryParameters.limit(request, default: 1000)
            let after = try QueryParameters.after(request, what: "record")
            let table = try await store.attributionRecords(after: after, limit: limit)
            let next: JSONValue = table.rows.count == limit ? (table.rows.last?.first ?? .null) : .null
            return JSONResponse.make(text: format.render(table, extra: [JSONMember(key: "next_after", value: next)]), contentType: format.contentType)
        }
        group.get("adservices/jobs") { request, _ in
            try QueryParameters.refuseUnknown(request, allowed: ["state", "limit", "format"])
            var states: [TokenJobState] = [.pending, .retrying, .failed]
            if let list = request.uri.queryParameters.get("state") {
                states = try list.split(separator: ",").map { name in
                    guard let state = TokenJobState(rawValue: String(name)) else {
                        throw APIError(.badRequest, "bad_parameter", "state: must be pending, retrying, done or failed (comma-separated)")
                    }
                    return state
                }
            }
            let format = try QueryParameters.format(request)
            let limit = try QueryParameters.limit(request, default: 100)
            let counts = try await store.tokenJobCounts()
            let jobs = try await store.tokenJobs(states: states, limit: limit)
            return JSONResponse.make(text: format.render(jobs, extra: [TokenJobState.countsMember(counts)]),
                                     contentType: format.contentType)
        }
        group.get("adservices/report") { request, _ in
            let parameters = request.uri.queryParameters
            let query: AttributionReportQuery
            do throws(ReportQuery.Problem) {
                query = try AttributionReportQuery.parse(parameters.map { (String($0.key), String($0.value)) }, extraAllowed: ["format"])
            } catch {
                throw APIError(.badRequest, "bad_parameter", error.description)
            }
            let format = try QueryParameters.format(request)
            let table = try await store.attributionReport(query)
            return JSONResponse.make(text: format.render(table), contentType: format.contentType)
        }
    }
}
