import Hummingbird
import JWS
import Store

/// `/v1/forwarding/templates[/{name}]`: the delivery templates rules name; a network's own are added, replaced and
/// removed here (admin scope, a key for every app).
enum DeliveryTemplateRoutes {
    static func add(to api: PrivateAPI, store: StoreDatabase) {
        api.admin.get("forwarding/templates") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let listed = try await store.deliveryTemplates.all()
            return JSONResponse.make(JSONObject([JSONMember(key: "templates", value: .array(listed.map { .object(json($0)) }))]))
        }
        api.admin.get("forwarding/templates/:name") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            guard let template = try await store.deliveryTemplates.named(name) else { throw notFound(name) }
            return JSONResponse.make(template.json)
        }
        api.admin.put("forwarding/templates/:name") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            let body = Array(buffer: try await RequestBody.collect(request, limit: DeliveryTemplate.maximumBytes))
            let template: DeliveryTemplate
            do {
                let parsed = try DeliveryTemplate.parse(body)
                guard parsed.name == name else {
                    throw APIError(.badRequest, .badParameter, "template: the file names \(parsed.name), the path \(name); they must agree")
                }
                template = try await store.deliveryTemplates.set(file: body)
            } catch let problem as DeliveryTemplate.Problem {
                throw APIError(.badRequest, .badParameter, problem.description)
            } catch let refusal as DeliveryTemplateStore.Refusal {
                throw error(refusal)
            }
            return JSONResponse.make(template.json)
        }
        api.admin.delete("forwarding/templates/:name") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            let removed: Bool
            do { removed = try await store.deliveryTemplates.remove(name) } catch let refusal as DeliveryTemplateStore.Refusal {
                throw error(refusal)
            }
            guard removed else { throw notFound(name) }
            return JSONResponse.make(JSONObject([JSONMember(key: "removed", value: .string(name))]))
        }
    }

    /// A listed template: its file's members, whether it is shipped, and when a network's own was set.
    static func json(_ listed: DeliveryTemplateStore.Listed) -> JSONObject {
        var object = listed.template.json
        object.set("shipped", .bool(listed.shipped))
        object.set("updated_at", listed.updatedAt.map { .string($0) } ?? .null)
        return object
    }

    static func notFound(_ name: String) -> APIError {
        APIError(.notFound, .forwardTemplateNotFound, "no delivery template is named \(name); GET /v1/forwarding/templates lists them")
    }

    static func error(_ refusal: DeliveryTemplateStore.Refusal) -> APIError {
        switch refusal {
        case .shipped: APIError(.conflict, .forwardTemplateShipped, refusal.description)
        case .tooMany: APIError(.conflict, .forwardTemplateLimit, refusal.description)
        case .inUse: APIError(.conflict, .forwardTemplateInUse, refusal.description)
        }
    }
}
