import Hummingbird
import JWS
import Postback
import Store

/// `/v1/advertisers[/{name}]`: the advertisers a network serves and their apps (admin scope, a key for every app).
/// Keys for an advertiser are made with `countersign apikey create --advertiser`.
enum AdvertiserRoutes {
    static let maximumBodySize = 64 * 1024

    static func add(to api: PrivateAPI, store: StoreDatabase) {
        api.admin.get("advertisers") { request, context in
            try context.requireEveryApp("advertisers")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let listed = try await store.advertisers.all()
            return JSONResponse.make(JSONObject([JSONMember(key: "advertisers", value: .array(listed.map { .object($0.json) }))]))
        }
        api.admin.get("advertisers/:name") { request, context in
            try context.requireEveryApp("advertisers")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            guard let entry = try await store.advertisers.named(name) else { throw notFound(name) }
            return JSONResponse.make(entry.json)
        }
        api.admin.put("advertisers/:name") { request, context in
            try context.requireEveryApp("advertisers")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            let apps = try apps(Array(buffer: try await RequestBody.collect(request, limit: maximumBodySize)))
            do {
                return JSONResponse.make(try await store.advertisers.set(name: name, apps: apps).json)
            } catch let refusal as AdvertiserRegistry.Refusal {
                switch refusal {
                case .badName: throw APIError(.badRequest, .badParameter, refusal.description)
                case .appsTaken: throw APIError(.conflict, .advertiserAppTaken, refusal.description)
                case .tooMany: throw APIError(.conflict, .advertiserLimit, refusal.description)
                }
            }
        }
        api.admin.delete("advertisers/:name") { request, context in
            try context.requireEveryApp("advertisers")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            guard try await store.advertisers.remove(name) else { throw notFound(name) }
            return JSONResponse.make(JSONObject([JSONMember(key: "removed", value: .string(name))]))
        }
    }

    /// The body `{"apps": [1108187390, ...]}`: the advertiser's apps, replacing those it had.
    static func apps(_ body: [UInt8]) throws -> Set<AppID> {
        let usage = #"the body must be a JSON object such as {"apps": [1108187390, 525463029]}"#
        guard let object = (try? JSONParser.parse(body))?.object, object.members.allSatisfy({ $0.key == "apps" }),
              case .array(let list)? = object["apps"] else { throw APIError(.badRequest, .badParameter, usage) }
        guard list.count <= AdvertiserRegistry.maximumApps else {
            throw APIError(.badRequest, .badParameter, "apps: an advertiser has at most \(AdvertiserRegistry.maximumApps) apps")
        }
        var apps: Set<AppID> = []
        for value in list {
            // An integer written as a number with a zero fraction (759518.0) is the same integer, as JSON Schema counts it.
            guard let number = value.int64 ?? Self.integral(value), number > 0 else { throw APIError(.badRequest, .badParameter, "apps: each is an App Store id, a positive integer") }
            apps.insert(AppID(number))
        }
        return apps
    }

    /// A number literal with a zero fraction (`759518.0`) as its integer; nil otherwise.
    static func integral(_ value: JSONValue) -> Int64? {
        guard case .number(let literal) = value, let point = literal.firstIndex(of: "."),
              literal[literal.index(after: point)...].allSatisfy({ $0 == "0" }) else { return nil }
        return Int64(literal[..<point])
    }

    static func notFound(_ name: String) -> APIError {
        APIError(.notFound, .advertiserNotFound, "no advertiser is named \(name); GET /v1/advertisers lists them")
    }
}
