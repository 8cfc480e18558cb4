import Foundation
import Hummingbird
import JWS
import NIOPosix
import Spend
import Postback
import Store

/// `POST /v1/spend` (spend and claims as a network reports them), `POST /v1/rates` (exchange rates),
/// `GET /v1/spend/imports` (what was imported, by whom, from which file) and `GET /v1/performance` (what installs cost
/// and returned, claimed against verified). Imports need the schemas scope: like schemas
/// and names, they change what reports say.
enum SpendRoutes {
    static func add(to api: PrivateAPI, store: StoreDatabase, uploadLimit: Int) {
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
            let bytes = Array(buffer: try await RequestBody.collect(request, limit: uploadLimit))
            let rates = try await NIOThreadPool.singleton.runIfActive { ExchangeRateFile.read(bytes) }
            switch rates {
            case .failure(let problems): throw SpendProblemsError(problems)
            case .success(let rates):
                let provenance = ImportProvenance(importedBy: context.grant?.name ?? "api", fileName: fileName, format: "rates", bytes: bytes)
                return JSONResponse.make(try await store.spend.importRates(rates, provenance: provenance).json)
            }
        }
        api.read.get("performance") { request, context in
            let pairs = try await ReportRoutes.parameters(request, store: store)
            let query: PerformanceQuery
            do throws(QueryProblem) { query = try PerformanceQuery.parse(pairs, extraAllowed: ["format"]) } catch {
                throw APIError(.badRequest, .badParameter, error.description)
            }
            try context.requireApp(query.app)
            let format = try QueryParameters.format(request)
            let table = try await store.performance.report(query)
            return JSONResponse.make(text: format.render(table), contentType: format.contentType,
                                     headers: [.init("Countersign-Time-Zone")!: query.timeZone.identifier])
        }
        api.read.post("reconciliation/postbacks") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["ad_network", "app", "from", "to", "format"])
            let parameters = request.uri.queryParameters
            let scope: (adNetwork: String?, app: AppID?, from: Date?, to: Date?)
            do throws(QueryProblem) {
                let query = try PerformanceQuery.parse(parameters.map { (String($0.key), String($0.value)) }, extraAllowed: ["format"])
                scope = (query.adNetwork, query.app, query.from, query.to)
            } catch {
                throw APIError(.badRequest, .badParameter, error.description)
            }
            if let app = scope.app { try context.requireApp(app) } else { try context.requireEveryApp("reconciliation without app=") }
            let format = try QueryParameters.format(request)
            let bytes = Array(buffer: try await RequestBody.collect(request, limit: uploadLimit))
            let identifiers = try IdentifierList.read(bytes)
            let table = try await store.reconciliation.reconcile(identifiers: identifiers, adNetwork: scope.adNetwork, app: scope.app, from: scope.from, to: scope.to)
            return JSONResponse.make(text: format.render(table, extra: [IdentifierList.counts(table)]), contentType: format.contentType)
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

/// The identifiers a network claims: one a line, or the first column of a CSV whose header names it
/// (`identifier`, `postback_identifier`, `transaction_id`).
package enum IdentifierList {
    /// The identifiers of `bytes`, or 400 naming the first bad line (or saying there are none).
    package static func read(_ bytes: [UInt8]) throws -> [String] {
        var reader = CSVReader(bytes, maximumFields: 64, maximumFieldBytes: 128)
        var identifiers: [String] = []
        do {
            while let record = try reader.next() {
                var trimmed = Substring(record.fields[0])
                while let first = trimmed.utf8.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
                while let last = trimmed.utf8.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
                let text = String(trimmed)
                if text.isEmpty || (record.line == 1 && ["identifier", "postback_identifier", "postback-identifier", "transaction_id", "transaction-id"].contains(text.lowercased())) { continue }
                guard text.utf8.count <= 128, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                    throw APIError(.badRequest, .badParameter, "line \(record.line): an identifier is at most 128 printable characters, such as a postback-identifier or transaction-id")
                }
                identifiers.append(text)
                guard identifiers.count <= PostbackReconciliation.maximumIdentifiers else {
                    throw APIError(.badRequest, .badParameter, "more than \(PostbackReconciliation.maximumIdentifiers) identifiers; send them in parts")
                }
            }
        } catch let problem as CSVProblem {
            throw APIError(.badRequest, .badParameter, problem.description)
        }
        guard !identifiers.isEmpty else {
            throw APIError(.badRequest, .badParameter, "no identifiers: send the postback identifiers the network claims, one a line")
        }
        return identifiers
    }

    /// `counts`: how many rows have each status.
    package static func counts(_ table: ReportTable) -> JSONMember {
        var counts: [String: Int] = [:]
        for row in table.rows { if case .string(let status) = row[1] { counts[status, default: 0] += 1 } }
        return JSONMember(key: "counts", value: .object(JSONObject(PostbackReconciliation.Status.allCases.map {
            JSONMember(key: $0.rawValue, value: .number(String(counts[$0.rawValue] ?? 0)))
        })))
    }
}

extension SpendRoutes {
    /// The `file_name` parameter: at most 256 characters (control characters are refused before any route).
    static func fileName(_ request: Request) throws -> String? {
        guard let name = request.uri.queryParameters.get("file_name") else { return nil }
        guard (1...256).contains(name.count) else { throw APIError(.badRequest, .badParameter, "file_name: must be 1 to 256 characters") }
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
