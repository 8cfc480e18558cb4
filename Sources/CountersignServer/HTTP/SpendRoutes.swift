import Foundation
import Hummingbird
import JWS
import NIOPosix
import Spend
import Postback
import Store

/// `POST /v1/spend` (spend and claims as a network reports them), `POST /v1/rates` (exchange rates),
/// `GET /v1/spend/imports` (what was imported, by whom, from which file), `GET /v1/performance` (what installs cost
/// and returned, claimed against verified) and `GET /v1/cohorts` (returns by days since install). Imports need the schemas scope: like schemas
/// and names, they change what reports say.
enum SpendRoutes {
    /// `maximumGroups` caps the groups one performance report adds up (`--performance-max-groups`).
    /// `limits.imports` bounds the spend and rate imports running at once, `limits.report` the performance reports.
    static func add(to api: PrivateAPI, store: StoreDatabase, uploadLimit: Int, maximumGroups: Int, limits: ServerLimits) {
        api.schemas.post("spend") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["format", "file_name", "app", "ad_network", "currency"])
            let parameters = request.uri.queryParameters
            guard let format = SpendFormat(rawValue: parameters.get("format") ?? SpendFormat.generic.rawValue) else {
                throw APIError(.badRequest, .badParameter, "format: must be one of \(SpendFormat.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var defaults = SpendDefaults()
            defaults.app = try QueryParameters.app(request)
            defaults.adNetwork = parameters.get("ad_network")
            defaults.currency = parameters.get("currency")
            if let problem = defaults.problem { throw APIError(.badRequest, .badParameter, "\(problem.field): \(problem.message)") }
            let fileName = try Self.fileName(request)
            // An import holds its file and stages it for a while: a few at a time, so their pace holds (trust round 4).
            let permit = try limits.imports.acquire(key: context.heavyRequestKey)
            defer { permit.release() }
            let bytes = Array(buffer: try await RequestBody.collect(request, limit: uploadLimit))
            // Reading a large file is seconds of work: it runs on a thread of its own, not on the pool serving requests.
            let given = defaults
            let rows = try await NIOThreadPool.singleton.runIfActive { SpendFile.read(bytes, format: format, defaults: given) }
            switch rows {
            case .failure(let problems): throw SpendProblemsError(problems)
            case .success(let rows):
                for app in Set(rows.map(\.app)) { try context.requireApp(app) }
                let provenance = ImportProvenance(importedBy: context.grant?.name ?? "api", fileName: fileName, format: format.rawValue, bytes: bytes)
                return JSONResponse.make(try await store.spend.importSpend(rows, provenance: provenance).json)
            }
        }
        api.schemas.post("rates") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["file_name"])
            try context.requireEveryApp("exchange rates")
            let fileName = try Self.fileName(request)
            let permit = try limits.imports.acquire(key: context.heavyRequestKey)
            defer { permit.release() }
            let bytes = Array(buffer: try await RequestBody.collect(request, limit: uploadLimit))
            let rates = try await NIOThreadPool.singleton.runIfActive { ExchangeRateFile.read(bytes) }
            switch rates {
            case .failure(let problems): throw SpendProblemsError(problems)
            case .success(let rates):
                let provenance = ImportProvenance(importedBy: context.grant?.name ?? "api", fileName: fileName, format: "rates", bytes: bytes)
                return JSONResponse.make(try await store.spend.importRates(rates, provenance: provenance).json)
            }
        }
        // Paged as /v1/conversions is (`limit`, `after`, `Next-After`, `next_after`), rows in the report's order; a
        // report of more than `maximumGroups` groups is refused whichever page is asked (trust round 4, finding 5).
        api.read.get("performance") { request, context in
            let pairs = try await ReportRoutes.parameters(request, context: context, store: store)
            let query: PerformanceQuery
            do throws(QueryProblem) { query = try PerformanceQuery.parse(pairs, extraAllowed: ["format", "limit", "after"]) } catch {
                throw APIError(.badRequest, .badParameter, error.description)
            }
            try context.requireApp(query.app)
            let format = try QueryParameters.format(request)
            let limit = try QueryParameters.limit(request, default: QueryParameters.maximumPage)
            let after = try PerformanceCursor.read(request, dimensions: query.groupBy.count)
            // The request is checked; what follows reads and adds up the report, the heavy part, under a permit held
            // until the page's last byte is written (or freed with the response).
            let permit = try limits.report.acquire(key: context.heavyRequestKey)
            let page: PerformanceReader.Page
            do {
                page = try await store.performance.page(query, maximumGroups: maximumGroups, after: after, limit: limit)
            } catch let error as PerformanceReader.TooManyGroups {
                let by = query.groupBy.map(\.rawValue).joined(separator: ",")
                throw APIError(.badRequest, .tooManyGroups, "by=\(by) selects more than \(error.maximum) groups; narrow from/to, "
                               + "filter by app, ad_network, campaign or country, or group by fewer dimensions")
            }
            let next = page.next.map(PerformanceCursor.encode)
            var headers: HTTPFields = [.contentType: format.contentType, .init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: query.basis.rawValue]
            if let next { headers[.init("Next-After")!] = next }
            let extra = [JSONMember(key: "next_after", value: next.map(JSONValue.string) ?? .null)]
            // The page's text is written in pieces as its rows are, never held whole.
            let table = page.table
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                defer { permit.release() }
                try await format.write(table, extra: extra) { bytes in try await writer.write(ByteBuffer(bytes: bytes)) }
                try await writer.finish(nil)
            })
        }
        api.read.get("cohorts") { request, context in
            let pairs = try await ReportRoutes.parameters(request, context: context, store: store)
            let query: PerformanceQuery
            do throws(QueryProblem) { query = try CohortCurveReader.query(pairs, extraAllowed: ["format"]) } catch {
                throw APIError(.badRequest, .badParameter, error.description)
            }
            try context.requireApp(query.app)
            let format = try QueryParameters.format(request)
            let permit = try limits.report.acquire(key: context.heavyRequestKey)
            defer { permit.release() }
            let table: ReportTable
            do {
                table = try await store.cohorts.report(query, maximumGroups: maximumGroups)
            } catch let error as PerformanceReader.TooManyGroups {
                throw APIError(.badRequest, .tooManyGroups, "the install weeks and groups asked for exceed \(error.maximum); narrow from/to, "
                               + "filter by app, ad_network, campaign or country, or group by fewer dimensions")
            }
            return JSONResponse.make(text: format.render(table), contentType: format.contentType,
                                     headers: [.init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: query.basis.rawValue])
        }
        api.read.get("spend/imports") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["limit", "format"])
            try context.requireEveryApp("the import list")
            let format = try QueryParameters.format(request)
            let table = try await store.spend.imports(limit: try QueryParameters.limit(request, default: 100))
            return JSONResponse.make(text: format.render(table), contentType: format.contentType)
        }
    }
}

extension SpendRoutes {
    /// `POST /v1/reconciliation/postbacks`: a network's list of identifiers read as it arrives (at most `uploadLimit`
    /// bytes, `--reconcile-upload-limit`), each distinct one kept once in compact form, then checked `sizes.lookup` at a
    /// time and answered as the rows are found, in buffers of about `sizes.answer` bytes, as the export is: neither the
    /// list, nor the table, nor its text is ever held whole (trust round 4, finding 3).
    static func addReconciliation(to api: PrivateAPI, store: StoreDatabase, uploadLimit: Int, sizes: PostbackReconciliation.Sizes,
                                  limiter: HeavyRequestLimiter) {
        api.read.post("reconciliation/postbacks") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["ad_network", "app", "from", "to", "last", "tz", "unclaimed", "format"])
            // Dates without a zone are days in `tz`, else the app's registered zone, else UTC (issue 49, finding 3).
            let parameters = try await ReportRoutes.parameters(request, context: context, store: store)
            let scope: (adNetwork: String?, app: AppID?, from: Date?, to: Date?)
            do throws(QueryProblem) {
                let query = try PerformanceQuery.parse(parameters, extraAllowed: ["format", "unclaimed"])
                scope = (query.adNetwork, query.app, query.from, query.to)
            } catch {
                throw APIError(.badRequest, .badParameter, error.description)
            }
            if let app = scope.app { try context.requireApp(app) } else { try context.requireEveryApp("reconciliation without app=") }
            let unclaimedName = request.uri.queryParameters.get("unclaimed") ?? PostbackReconciliation.UnclaimedScope.all.rawValue
            guard let unclaimed = PostbackReconciliation.UnclaimedScope(rawValue: unclaimedName) else {
                throw APIError(.badRequest, .badParameter, "unclaimed: must be one of \(PostbackReconciliation.UnclaimedScope.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let format = try QueryParameters.format(request)
            let written: TableWriter.Format = switch format {
            case .csv: .csv
            case .ndjson: .ndjson
            case .json, .table: .json
            }
            // The whole list is read and checked before the answer starts: a bad line, no identifier or too many is a
            // 400 with nothing sent. Reading it is heavy too, so the permit comes first and lives until the last byte.
            let permit = try limiter.acquire(key: context.heavyRequestKey)
            let claimed = try await IdentifierList.read(request, limit: uploadLimit, sizes: sizes)
            let reconciling = scope
            return Response(status: .ok, headers: [.contentType: format.contentType], body: ResponseBody { writer in
                defer { permit.release() }
                try await store.reconciliation.reconcile(claimed, adNetwork: reconciling.adNetwork, app: reconciling.app, from: reconciling.from,
                                                         to: reconciling.to, unclaimed: unclaimed,
                                                         into: TableWriter(format: written, columns: PostbackReconciliation.columns), sizes: sizes) { bytes in
                    try await writer.write(ByteBuffer(bytes: bytes))
                }
                try await writer.finish(nil)
            })
        }
    }
}

extension SpendRoutes {
    /// The `file_name` parameter: at most 256 characters (control characters are refused before any route), without
    /// format characters (bidi, zero-width), separators or noncharacters either (``LabelText``).
    static func fileName(_ request: Request) throws -> String? {
        guard let name = request.uri.queryParameters.get("file_name") else { return nil }
        guard (1...256).contains(name.count), !LabelText.hasRefused(name) else {
            throw APIError(.badRequest, .badParameter, "file_name: must be 1 to 256 characters without \(LabelText.refusedKinds)")
        }
        return name
    }
}

/// 400 `invalid_spend` with every problem: `{"error", "message", "problem_count", "problems": [{"line", "column", "message"}]}`.
struct SpendProblemsError: HTTPResponseError {
    let problems: SpendFileProblems

    init(_ problems: SpendFileProblems) { self.problems = problems }

    var status: HTTPResponse.Status { .badRequest }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var answer = JSONObject()
        answer.set("error", .string(APIErrorCode.invalidSpend.rawValue))
        answer.set("message", .string("the file was not imported (nothing was stored): \(problems.description)"))
        answer.set("problem_count", .number(String(problems.total)))
        answer.set("problems", .array(problems.problems.map { problem in
            .object(JSONObject([
                JSONMember(key: "line", value: .number(String(problem.line))),
                JSONMember(key: "column", value: problem.column.map { .string($0) } ?? .null),
                JSONMember(key: "message", value: .string(problem.message)),
            ]))
        }))
        return JSONResponse.make(status: .badRequest, answer)
    }
}
