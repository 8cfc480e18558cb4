import ConversionSchema
import Foundation
import Hummingbird
import JWS
import Store
import Postback

/// `PUT /v1/schemas/{app}`, `GET /v1/schemas/{app}` and `GET /v1/schemas/{app}/published`.
enum SchemaRoutes {
    static let maximumSchemaSize = 1 << 20

    static func add(to api: PrivateAPI, store: StoreDatabase, backlog: SchemaBacklogDecoder) {
        api.schemas.put("schemas/:app") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/schemas/1108187390")
            let body = try await RequestBody.collect(request, limit: maximumSchemaSize)
            switch try await store.schemas.put(app: app, document: Array(buffer: body)) {
            case .invalid(let errors):
                var answer = JSONObject()
                answer.set("error", .string("invalid_schema"))
                answer.set("message", .string("the schema has \(errors.count) error(s)"))
                answer.set("diagnostics", .array(errors.map(diagnostic)))
                return JSONResponse.make(status: .unprocessableContent, answer)
            case .stored(let revision, let warnings, let waiting):
                // The answer does not wait for the app's earlier postbacks: they are decoded in the background.
                if waiting > 0 { backlog.schemaUploaded() }
                return JSONResponse.make(JSONObject([
                    JSONMember(key: "app", value: .string(app.description)),
                    JSONMember(key: "revision", value: .number(String(revision))),
                    JSONMember(key: "warnings", value: .array(warnings.map(diagnostic))),
                    JSONMember(key: "waiting_postbacks", value: .number(String(waiting))),
                ]))
            }
        }
        api.read.get("schemas/:app") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/schemas/1108187390")
            guard let stored = try await store.schemas.document(app: app) else {
                throw APIError(.notFound, .schemaNotFound, "no schema has been uploaded for app \(app)")
            }
            var headers = HTTPFields()
            headers[.init("Schema-Revision")!] = String(stored.revision)
            headers[.init("Schema-Waiting-Postbacks")!] = String(try await store.ledger.waitingForDecoding(app: app))
            return JSONResponse.make(text: stored.document, headers: headers)
        }
        // The current revision in the form apps encode with (docs/app-integration.md), cacheable by its ETag; made once
        // per revision, since anyone may ask when the app says so.
        let published = PublishedSchemaCache()
        api.published.get("schemas/:app/published") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/schemas/1108187390/published")
            guard let entry = try await published.entry(app: app, store: store) else {
                throw APIError(.notFound, .schemaNotFound, "no schema has been uploaded for app \(app)")
            }
            var headers = HTTPFields()
            headers[.eTag] = entry.tag
            headers[.cacheControl] = context.grant == nil ? "public, max-age=300" : "private, max-age=300"
            headers[.init("Schema-Revision")!] = String(entry.revision)
            // RFC 9110: If-None-Match compares weakly, so W/"tag" matches "tag"; * matches any current document.
            let held = request.headers[.ifNoneMatch]?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? []
            if held.contains(where: { $0 == "*" || $0 == entry.tag || $0 == "W/" + entry.tag }) {
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: entry.body)))
        }
    }

    static func diagnostic(_ diagnostic: SchemaDiagnostic) -> JSONValue {
        .object(JSONObject([
            JSONMember(key: "severity", value: .string(diagnostic.severity.rawValue)),
            JSONMember(key: "path", value: .string(diagnostic.path)),
            JSONMember(key: "message", value: .string(diagnostic.message)),
        ]))
    }
}
