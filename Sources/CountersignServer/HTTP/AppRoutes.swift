import Foundation
import Hummingbird
import JWS
import Postback
import Store

/// `GET /v1/apps`, `PUT /v1/apps/{app}` and `DELETE /v1/apps/{app}`: the app registry (changes need the admin scope);
/// `GET /v1/setup`: whether each app is set up right (docs/setup.md).
enum AppRoutes {
    static let maximumBodySize = 16 * 1024

    static func add(to api: PrivateAPI, store: StoreDatabase, appRules: AppPolicyRefresher) {
        api.read.get("apps") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let apps = try await store.apps.list().filter { context.grant?.covers(app: $0.app) ?? true }
            return JSONResponse.make(JSONObject([JSONMember(key: "apps", value: .array(apps.map { .object($0.json) }))]))
        }
        api.read.get("setup") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["app", "days", "format"])
            let app = try QueryParameters.app(request)
            if let app { try context.requireApp(app) }
            let days = try QueryParameters.limit(request, default: 30, name: "days", maximum: 400)
            let format = try QueryParameters.format(request)
            let grant = context.grant
            let since = Date().addingTimeInterval(-Double(days - 1) * 86_400)
            let (table, apps) = try await store.setupStatus.report(app: app, since: since, visible: { grant?.covers(app: $0) ?? true })
            let encoder = try await store.setupStatus.encoder(app: app, since: since, visible: { grant?.covers(app: $0) ?? true })
            let extra = [JSONMember(key: "apps", value: .array(apps.map(\.json))), JSONMember(key: "encoder", value: encoder.symptomsJSON),
                         JSONMember(key: "encoder_days", value: encoder.daysJSON)]
            return JSONResponse.make(text: format.render(table, extra: extra), contentType: format.contentType)
        }
        api.admin.put("apps/:app") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/apps/1108187390")
            let body = try await RequestBody.collect(request, limit: maximumBodySize)
            let entry = try entry(app: app, body: Array(buffer: body))
            do { try await store.apps.set(entry) } catch let problem as AppRegistry.Problem {
                throw APIError(.badRequest, .badParameter, problem.description)
            }
            try await appRules.registryChanged()
            let stored = try await store.apps.list().first { $0.app == app }
            return JSONResponse.make(stored?.json ?? entry.json)
        }
        api.admin.delete("apps/:app") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/apps/1108187390")
            guard try await store.apps.remove(app: app) else { throw APIError(.notFound, .appNotRegistered, "app \(app) is not in the registry") }
            try await appRules.registryChanged()
            return Response(status: .noContent)
        }
    }

    /// The body `{"name": ..., "ad_networks": [...], "allow_development": bool, "currency": "EUR", "time_zone": "Europe/Berlin",
    /// "copy_domain": "example.com", "public_schema": false}`.
    static func entry(app: AppID, body: [UInt8]) throws -> AppRegistry.Entry {
        let usage = #"the body must be a JSON object such as {"name": "Game", "ad_networks": ["example123.skadnetwork"], "allow_development": false, "currency": "USD", "time_zone": "Europe/Berlin", "copy_domain": "example.com", "public_schema": false}"#
        guard let object = (try? JSONParser.parse(body))?.object else { throw APIError(.badRequest, .badParameter, usage) }
        let known: Set<String> = ["name", "ad_networks", "allow_development", "currency", "time_zone", "copy_domain", "public_schema"]
        for member in object.members where !known.contains(member.key) {
            throw APIError(.badRequest, .badParameter, "\(member.key): unknown field; \(usage)")
        }
        guard let name = object["name"]?.string else { throw APIError(.badRequest, .badParameter, "name: required; \(usage)") }
        var networks: [String] = []
        if let list = object["ad_networks"], list != .null {
            guard case .array(let items) = list, let strings = Optional(items.compactMap(\.string)), strings.count == items.count else {
                throw APIError(.badRequest, .badParameter, "ad_networks: must be a list of ad network ids")
            }
            networks = strings
        }
        func optionalText(_ key: String) throws -> String? {
            guard let value = object[key], value != .null else { return nil }
            guard let text = value.string else { throw APIError(.badRequest, .badParameter, "\(key): must be text") }
            return text
        }
        let development = object["allow_development"]
        guard development == nil || development == .null || development?.bool != nil else {
            throw APIError(.badRequest, .badParameter, "allow_development: must be true or false")
        }
        let publicSchema = object["public_schema"]
        guard publicSchema == nil || publicSchema == .null || publicSchema?.bool != nil else {
            throw APIError(.badRequest, .badParameter, "public_schema: must be true or false")
        }
        return AppRegistry.Entry(app: app, name: name, adNetworks: networks, allowDevelopment: development?.bool ?? false,
                                 currency: try optionalText("currency"), timeZone: try optionalText("time_zone"), copyDomain: try optionalText("copy_domain"),
                                 publicSchema: publicSchema?.bool ?? false)
    }
}
