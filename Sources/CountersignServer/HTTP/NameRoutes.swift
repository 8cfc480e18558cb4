import Hummingbird
import Spend
import NIOPosix
import JWS
import Store
import Postback

/// The ad-network registry (`/v1/ad-networks`) and campaign, ad-group and creative names per app and ad network
/// (`/v1/names/{app}`).
enum NameRoutes {
    /// A name body is `{"name": "..."}`; nothing longer is read.
    static let maximumBodySize = 4096

    static func add(to api: PrivateAPI, store: StoreDatabase) {
        addMappings(to: api, store: store)
        api.read.get("ad-networks") { request, _ in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let named = try await store.names.adNetworks()
            var rows = named.map { entry in
                JSONValue.object(JSONObject([
                    JSONMember(key: "ad_network_id", value: .string(entry.adNetworkID)), JSONMember(key: "name", value: .string(entry.name)),
                    JSONMember(key: "built_in", value: .bool(false)), JSONMember(key: "updated_at", value: .string(entry.updatedAt)),
                ]))
            }
            for (id, name) in NameRegistry.builtInAdNetworks.sorted(by: { $0.key < $1.key }) where !named.contains(where: { $0.adNetworkID == id }) {
                rows.append(.object(JSONObject([
                    JSONMember(key: "ad_network_id", value: .string(id)), JSONMember(key: "name", value: .string(name)),
                    JSONMember(key: "built_in", value: .bool(true)), JSONMember(key: "updated_at", value: .null),
                ])))
            }
            return JSONResponse.make(JSONObject([JSONMember(key: "ad_networks", value: .array(rows))]))
        }
        api.schemas.put("ad-networks/:network") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            try context.requireEveryApp("the ad-network registry")
            let network = context.parameters.get("network") ?? ""
            let name = try await nameBody(request)
            try await checked { try await store.names.setAdNetwork(network, name: name) }
            return JSONResponse.make(JSONObject([JSONMember(key: "ad_network_id", value: .string(network)), JSONMember(key: "name", value: .string(name))]))
        }
        api.schemas.delete("ad-networks/:network") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            try context.requireEveryApp("the ad-network registry")
            let network = context.parameters.get("network") ?? ""
            guard try await store.names.removeAdNetwork(network) else {
                throw APIError(.notFound, .nameNotFound, "ad network \(network) has no name in the registry")
            }
            return Response(status: .noContent)
        }
        api.read.get("names/:app") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/names/1108187390")
            let names = try await store.names.sourceNames(app: app)
            return JSONResponse.make(JSONObject([JSONMember(key: "names", value: .array(names.map { entry in
                .object(JSONObject([
                    JSONMember(key: "app", value: .number(String(entry.app))), JSONMember(key: "ad_network_id", value: .string(entry.adNetworkID)),
                    JSONMember(key: "level", value: .string(entry.level.rawValue)), JSONMember(key: "digits", value: .string(entry.digits)),
                    JSONMember(key: "name", value: .string(entry.name)), JSONMember(key: "updated_at", value: .string(entry.updatedAt)),
                ]))
            }))]))
        }
        api.schemas.put("names/:app/:network/:level/:digits") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let (app, network, level, digits) = try sourceParameters(context)
            let name = try await nameBody(request)
            try await checked { try await store.names.setSourceName(app: app, adNetwork: network, level: level, digits: digits, name: name) }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "app", value: .number(String(app))), JSONMember(key: "ad_network_id", value: .string(network)),
                JSONMember(key: "level", value: .string(level.rawValue)), JSONMember(key: "digits", value: .string(digits)),
                JSONMember(key: "name", value: .string(name)),
            ]))
        }
        api.schemas.delete("names/:app/:network/:level/:digits") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let (app, network, level, digits) = try sourceParameters(context)
            guard try await store.names.removeSourceName(app: app, adNetwork: network, level: level, digits: digits) else {
                throw APIError(.notFound, .nameNotFound, "app \(app) has no \(level.rawValue) name for \(digits) on \(network)")
            }
            return Response(status: .noContent)
        }
    }

    /// The largest mapping file a PUT reads.
    static let maximumMappingBytes = 4 * 1024 * 1024

    /// `GET /v1/names/{app}/mappings` and `PUT /v1/names/{app}/{network}/mappings`: dated source-identifier mappings,
    /// a CSV in the SKAN standard's layout replacing the app and network's whole list.
    static func addMappings(to api: PrivateAPI, store: StoreDatabase) {
        api.read.get("names/:app/mappings") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["ad_network"])
            let app = try QueryParameters.pathApp(context, example: "/v1/names/1108187390/mappings")
            let network = request.uri.queryParameters.get("ad_network").map { String($0) }
            if let network, !isAdNetworkID(network) {
                throw APIError(.badRequest, .badParameter, "ad_network: must be a lowercase ad network id such as example123.skadnetwork")
            }
            let listed = try await store.names.mappings(app: app, adNetwork: network)
            return JSONResponse.make(JSONObject([JSONMember(key: "mappings", value: .array(listed.map { entry in
                var object = entry.mapping.json
                object.set("ad_network_id", .string(entry.adNetwork))
                return .object(object)
            }))]))
        }
        api.schemas.put("names/:app/:network/mappings") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: [])
            let app = try QueryParameters.pathApp(context, example: "/v1/names/1108187390/example123.skadnetwork/mappings")
            let network = context.parameters.get("network") ?? ""
            let bytes = Array(buffer: try await RequestBody.collect(request, limit: maximumMappingBytes))
            let count: Int
            do {
                let mappings = try await NIOThreadPool.singleton.runIfActive { try SourceMapping.parse(bytes) }
                count = try await store.names.setMappings(app: app, adNetwork: network, mappings)
            } catch let problem as SourceMapping.Problem {
                throw APIError(.badRequest, .invalidMapping, problem.description)
            } catch let problem as NameRegistry.Problem {
                throw APIError(.badRequest, .badParameter, problem.description)
            }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "app", value: .number(String(app))), JSONMember(key: "ad_network_id", value: .string(network)),
                JSONMember(key: "mappings", value: .number(String(count))),
            ]))
        }
    }

    /// The `name` of a `{"name": "..."}` body.
    static func nameBody(_ request: Request) async throws -> String {
        let body = try await RequestBody.collect(request, limit: maximumBodySize)
        let usage = #"the body must be a JSON object such as {"name": "Spring sale"}"#
        guard let object = (try? JSONParser.parse(Array(buffer: body)))?.object, let name = object["name"]?.string else {
            throw APIError(.badRequest, .badParameter, usage)
        }
        if let unknown = object.members.first(where: { $0.key != "name" }) {
            throw APIError(.badRequest, .badParameter, "\(unknown.key): unknown field; \(usage)")
        }
        return name
    }

    /// Runs `body`, answering a refused name with 400 and what to send instead.
    static func checked(_ body: () async throws -> Void) async throws {
        do { try await body() } catch let problem as NameRegistry.Problem {
            throw APIError(.badRequest, .badParameter, problem.description)
        }
    }

    static func sourceParameters(_ context: AppRequestContext) throws -> (AppID, String, NameRegistry.Level, String) {
        let app = try QueryParameters.pathApp(context, example: "/v1/names/1108187390")
        guard let level = NameRegistry.Level(rawValue: context.parameters.get("level") ?? "") else {
            throw APIError(.badRequest, .badParameter, "level: must be \(NameRegistry.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return (app, context.parameters.get("network") ?? "", level, context.parameters.get("digits") ?? "")
    }
}
