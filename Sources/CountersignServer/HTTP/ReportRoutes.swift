import Foundation
import Hummingbird
import JWS
import Store
import Postback

/// `GET /v1/reports`, `GET /v1/conversions`, `GET /v1/conversions/export`, `GET /v1/postbacks` and
/// `GET /v1/networks/signing`.
enum ReportRoutes {
    static func add(to api: PrivateAPI, store: StoreDatabase, limits: ServerLimits) {
        // What each network signs, over the last `days` days (docs/metrics.md).
        api.read.get("networks/signing") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["app", "days", "format"])
            let app = try QueryParameters.app(request)
            try context.requireApp(app)
            let days = try QueryParameters.limit(request, default: 30, name: "days", maximum: 400)
            let format = try QueryParameters.format(request)
            return JSONResponse.make(text: format.render(try await store.signingMix.report(app: app, days: days)), contentType: format.contentType)
        }
        api.read.get("reports") { request, context in
            let (query, format) = try await parse(request, context: context, extra: ["format"], store: store)
            try context.requireApp(query.app)
            let table = try await store.reports.report(query)
            // Every format states the zone of its days and weeks; CSV and NDJSON only here.
            return JSONResponse.make(text: format.render(table), contentType: format.contentType,
                                     headers: [.init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: query.basis.rawValue])
        }
        addExport(to: api, store: store, limiter: limits.export)
        addPull(to: api, store: store, limiter: limits.export)
        api.read.get("conversions") { request, context in
            let (query, format) = try await parse(request, context: context, extra: ["format", "limit", "after"], store: store)
            try context.requireApp(query.app)
            let limit = try QueryParameters.limit(request, default: 1000)
            let after = try QueryParameters.after(request, what: "conversion")
            let table = try await store.reports.conversions(query, after: after, limit: limit)
            let next: JSONValue = table.rows.count == limit ? (table.rows.last?.first ?? .null) : .null
            var headers: HTTPFields = [.init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: query.basis.rawValue]
            if case .number(let id) = next { headers[.init("Next-After")!] = id }
            return JSONResponse.make(text: format.render(table, extra: [JSONMember(key: "next_after", value: next)]),
                                     contentType: format.contentType, headers: headers)
        }
    }

    /// Rows an HTTP export reads a page (the CLI's `export` reads larger ones): a page's text is held until written.
    static let exportPage = 2_000
    /// The largest buffer an export hands the connection at once, so a client that stops reading pins little.
    static let exportChunk = 64 * 1024

    /// The ranges of a page of `count` bytes that an export writes one buffer each, ``exportChunk`` bytes at most.
    static func exportChunks(count: Int) -> [Range<Int>] {
        stride(from: 0, to: count, by: ReportRoutes.exportChunk).map { $0..<min($0 + ReportRoutes.exportChunk, count) }
    }

    /// `GET /v1/conversions/export`: every conversion the filters select in one streamed answer (CSV by default, or
    /// NDJSON), read a page at a time so memory stays flat; a client that goes away stops the reading. `limiter` bounds
    /// the exports running at once, per key and in all (429 and 503 beyond); a client that stops reading is cut off by
    /// ``SendTimeoutHandler`` (trust round 4, finding 10).
    static func addExport(to api: PrivateAPI, store: StoreDatabase, limiter: HeavyRequestLimiter) {
        api.read.get("conversions/export") { request, context in
            let (query, _) = try await parse(request, context: context, extra: ["format"], store: store)
            try context.requireApp(query.app)
            let format: ReportFormat
            switch request.uri.queryParameters.get("format") ?? "csv" {
            case "csv": format = .csv
            case "ndjson": format = .ndjson
            default: throw APIError(.badRequest, .badParameter, "format: an export is csv or ndjson")
            }
            // The permit lives in the body's closure: it is released when the last byte is written, when writing fails
            // or is cancelled, or, for an answer never written (HEAD), when the response is freed.
            let permit = try limiter.acquire(key: context.heavyRequestKey)
            return Response(status: .ok, headers: [.contentType: format.contentType, .init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: query.basis.rawValue],
                            body: ResponseBody { writer in
                defer { permit.release() }
                let sink = TableWriter(format: format == .csv ? .csv : .ndjson, columns: ReportReader.conversionColumns)
                try await store.reports.exportConversions(query, into: sink, page: ReportRoutes.exportPage) { bytes in
                    for range in ReportRoutes.exportChunks(count: bytes.count) { try await writer.write(ByteBuffer(bytes: bytes[range])) }
                }
                try await writer.finish(nil)
            })
        }
    }

    /// `GET /v1/postbacks`: the raw pull. Every postback the filters select, Apple's fields as the device sent them plus
    /// the network's ids and names, made by a delivery template (`pull` by default), as NDJSON (default) or CSV, streamed
    /// as the export is and bounded by the same limiter.
    static func addPull(to api: PrivateAPI, store: StoreDatabase, limiter: HeavyRequestLimiter) {
        api.read.get("postbacks") { request, context in
            let (query, _) = try await parse(request, context: context, extra: ["format", "template"], store: store)
            try context.requireApp(query.app)
            guard let format = PullWriter.Format(rawValue: request.uri.queryParameters.get("format") ?? "ndjson") else {
                throw APIError(.badRequest, .badParameter, "format: a pull is ndjson or csv")
            }
            let name = request.uri.queryParameters.get("template") ?? PostbackPull.defaultTemplate
            // A key limited to apps may use the shipped templates only: the network's own are administration.
            let usable = context.grant?.apps == nil || DeliveryTemplateStore.shipped.contains { $0.name == name }
            guard usable, let template = try await store.deliveryTemplates.named(name) else { throw DeliveryTemplateRoutes.notFound(name) }
            let permit = try limiter.acquire(key: context.heavyRequestKey)
            let contentType = format == .csv ? ReportFormat.csv.contentType : ReportFormat.ndjson.contentType
            return Response(status: .ok, headers: [.contentType: contentType, .init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: query.basis.rawValue],
                            body: ResponseBody { writer in
                defer { permit.release() }
                try await PullWriter.write(store.pull, query, template: template, format: format, page: ReportRoutes.exportPage) { bytes in
                    for range in ReportRoutes.exportChunks(count: bytes.count) { try await writer.write(ByteBuffer(bytes: bytes[range])) }
                }
                try await writer.finish(nil)
            })
        }
    }

    static func parse(_ request: Request, context: AppRequestContext, extra: Set<String>, store: StoreDatabase) async throws -> (ReportQuery, ReportFormat) {
        let pairs = try await parameters(request, context: context, store: store)
        let query: ReportQuery
        do {
            query = try ReportQuery.parse(pairs, extraAllowed: extra)
        } catch {
            throw APIError(.badRequest, .badParameter, error.description)
        }
        return (query, try QueryParameters.format(request))
    }

    /// The request's query parameters, with the app's registered time zone added when the request names an app and
    /// no `tz`, and `last` (`7d`, `4w`: the days up to and including today in that zone) made into `from` and `to`.
    /// An app the key does not cover is refused first (403 `app_not_allowed`), so nothing said about a parameter tells
    /// of that app's registration or zone.
    static func parameters(_ request: Request, context: AppRequestContext, store: StoreDatabase, now: Date = Date()) async throws -> [(String, String)] {
        var pairs = request.uri.queryParameters.map { (String($0.key), String($0.value)) }
        let named = pairs.first(where: { $0.0 == "app" }).flatMap { AppID($0.1) }
        if let named { try context.requireApp(named) }
        if !pairs.contains(where: { $0.0 == "tz" }), let app = named, let zone = try await store.apps.timeZone(app: app) {
            pairs.append(("tz", zone))
        }
        if let last = pairs.first(where: { $0.0 == "last" })?.1 {
            guard !pairs.contains(where: { $0.0 == "from" || $0.0 == "to" }) else {
                throw APIError(.badRequest, .badParameter, "last: last replaces from and to; give one or the other")
            }
            guard pairs.filter({ $0.0 == "last" }).count == 1 else { throw APIError(.badRequest, .badParameter, "last: given more than once") }
            let zone = pairs.first { $0.0 == "tz" }.flatMap { TimeZone(identifier: $0.1) } ?? TimeZone(identifier: "UTC")!
            guard let period = RelativeDay.last(last, now: now, zone: zone) else {
                throw APIError(.badRequest, .badParameter, "last: a number of days or weeks up to today, such as 7d, 30d or 4w")
            }
            pairs.removeAll { $0.0 == "last" }
            pairs += [("from", period.from), ("to", period.to)]
        }
        return pairs
    }
}
