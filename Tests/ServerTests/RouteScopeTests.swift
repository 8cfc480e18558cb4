import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Store
import Prometheus
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// The scope each route needs is decided by the route the router matched, never by the spelling of the path
/// (issue 25, item 1): every registered route is in the table below, and every spelling the router accepts reaches the
/// same check, or no route at all.
@Suite struct RouteScopeTests {
    /// What each route needs: a scope, or nothing (public routes).
    static let table: [String: APIScope?] = [
        "POST /.well-known/appattribution/report-attribution": nil,
        "POST /.well-known/skadnetwork/report-attribution": nil,
        "POST /postbacks": nil,
        "POST /v1/adservices/tokens": nil,
        "POST /v1/iad/attribution": nil,
        "GET /dashboard": nil,
        "GET /dashboard/chart.js": nil,
        "GET /dashboard/{file}": nil,
        "GET /healthz": nil,
        "GET /readyz": nil,
        "GET /metrics": nil,
        "GET /v1/reports": .read,
        "GET /v1/conversions": .read,
        "GET /v1/conversions/export": .read,
        "GET /v1/intake": .read,
        "GET /v1/postbacks/{identifier}": .read,
        "GET /v1/postbacks": .read,
        "GET /v1/advertisers": .admin,
        "GET /v1/advertisers/{name}": .admin,
        "PUT /v1/advertisers/{name}": .admin,
        "DELETE /v1/advertisers/{name}": .admin,
        "GET /v1/schemas/{app}": .read,
        "GET /v1/schemas/{app}/published": .encoder,
        "GET /v1/networks/signing": .read,
        "PUT /v1/schemas/{app}": .schemas,
        "GET /v1/ad-networks": .read,
        "PUT /v1/ad-networks/{network}": .schemas,
        "DELETE /v1/ad-networks/{network}": .schemas,
        "GET /v1/names/{app}": .read,
        "GET /v1/names/{app}/mappings": .read,
        "PUT /v1/names/{app}/{network}/mappings": .schemas,
        "PUT /v1/names/{app}/{network}/{level}/{digits}": .schemas,
        "DELETE /v1/names/{app}/{network}/{level}/{digits}": .schemas,
        "GET /v1/apps": .read,
        "PUT /v1/apps/{app}": .admin,
        "DELETE /v1/apps/{app}": .admin,
        "GET /v1/forwarding/rules": .admin,
        "PUT /v1/forwarding/rules/{name}": .admin,
        "DELETE /v1/forwarding/rules/{name}": .admin,
        "POST /v1/forwarding/rules/{name}/test": .admin,
        "GET /v1/forwarding/templates": .admin,
        "GET /v1/forwarding/templates/{name}": .admin,
        "PUT /v1/forwarding/templates/{name}": .admin,
        "DELETE /v1/forwarding/templates/{name}": .admin,
        "GET /v1/forwarding/status": .admin,
        "GET /v1/forwarding/entries": .admin,
        "POST /v1/forwarding/retry": .admin,
        "POST /v1/forwarding/backfill": .admin,
        "GET /v1/alerts/rules": .admin,
        "PUT /v1/alerts/rules/{name}": .admin,
        "DELETE /v1/alerts/rules/{name}": .admin,
        "GET /v1/alerts/rules/{name}/reading": .admin,
        "GET /v1/alerts/status": .admin,
        "POST /v1/alerts/retry": .admin,
        "GET /v1/adservices/records": .read,
        "GET /v1/adservices/jobs": .read,
        "GET /v1/adservices/report": .read,
        "POST /v1/spend": .schemas,
        "POST /v1/rates": .schemas,
        "GET /v1/spend/imports": .read,
        "GET /v1/performance": .read,
        "GET /v1/cohorts": .read,
        "POST /v1/reconciliation/postbacks": .read,
        "GET /v1/setup": .read,
    ]

    /// A value for each path parameter.
    static let parameterValues = [
        "{app}": "1108187390", "{identifier}": "85546EB7-FD39-44BC-8990-C98A4AC36A49", "{network}": "example123.skadnetwork",
        "{level}": "campaign", "{digits}": "12", "{name}": "acme", "{file}": "core.js",
    ]

    /// Other spellings of `path` that a router might take for it: repeated, leading and trailing slashes, a dot segment,
    /// percent-encoding and upper case.
    static func spellings(of path: String) -> [String] {
        let segments = path.split(separator: "/").map(String.init)
        var variants = ["/" + path, path + "/", path + "//", path.replacingOccurrences(of: "/v1/", with: "/v1//"),
                        path.replacingOccurrences(of: "/v1/", with: "/v1/./"), path.replacingOccurrences(of: "/v1/", with: "/v1/x/../"),
                        path.uppercased(), path.replacingOccurrences(of: "/v1/", with: "/V1/")]
        for index in segments.indices.dropFirst() {
            var doubled = segments
            doubled[index] = "/" + doubled[index]
            variants.append("/" + doubled.joined(separator: "/"))
            var encoded = segments
            let first = encoded[index].unicodeScalars.first!
            encoded[index] = String(format: "%%%02X", first.value) + String(encoded[index].unicodeScalars.dropFirst())
            variants.append("/" + encoded.joined(separator: "/"))
        }
        return variants
    }

    /// What a key met: no key (401), a refused scope (403 insufficient_scope), or the route itself.
    enum Gate: Equatable {
        case unauthorized, insufficientScope, passed
    }

    static func gate(_ response: TestResponse) -> Gate {
        switch (response.status, response.json?["error"]?.string) {
        case (.unauthorized, _): .unauthorized
        case (.forbidden, "insufficient_scope"): .insufficientScope
        default: .passed
        }
    }

    @Test func everyRouteIsInTheScopeTable() async throws {
        let server = try await Self.application()
        let registered = Set(server.routes.map { "\($0.method.rawValue) \($0.path)" })
        #expect(registered == Set(Self.table.keys), "routes without a declared scope: \(registered.subtracting(Self.table.keys).sorted()); table rows without a route: \(Set(Self.table.keys).subtracting(registered).sorted())")
    }

    @Test func everySpellingOfEveryRouteMeetsTheScopeOfTheRouteItReaches() async throws {
        let database = try TestEngine.sqlite.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        var created: [APIScope: String] = [:]
        for scope in [APIScope.read, .schemas, .admin, .metrics] {
            created[scope] = try await store.apiKeys.create(name: scope.rawValue, scopes: [scope]).key
        }
        let keys = created
        // A schemas key limited to one app: the key the attack used.
        let limited = try await store.apiKeys.create(name: "limited", scopes: [.schemas], apps: [1_108_187_390]).key
        store.close()
        let server = try await Self.application(database: database)
        try await server.application().test(.router) { client in
            for (route, needed) in Self.table.sorted(by: { $0.key < $1.key }) {
                guard let needed else { continue }
                let parts = route.split(separator: " ")
                let method = HTTPRequest.Method(rawValue: String(parts[0]))!
                var path = String(parts[1])
                for (name, value) in Self.parameterValues { path = path.replacingOccurrences(of: name, with: value) }
                func gate(_ uri: String, _ key: String?) async throws -> (Gate, HTTPResponse.Status) {
                    let response = try await client.execute(uri: uri, method: method, headers: key.map { [.authorization: "Bearer \($0)"] } ?? [:])
                    return (Self.gate(response), response.status)
                }
                // The canonical spelling: no key is 401, a key without the scope 403, a key with it reaches the route.
                #expect(try await gate(path, nil).0 == .unauthorized, "\(route) without a key")
                for (scope, key) in keys.sorted(by: { $0.key < $1.key }) {
                    // Admin has every scope; read includes encoder (the published schemas).
                    let expected: Gate = scope == needed || scope == .admin || (scope == .read && needed == .encoder) ? .passed : .insufficientScope
                    #expect(try await gate(path, key).0 == expected, "\(route) with a \(scope.rawValue) key")
                }
                #expect(try await gate(path, limited).0 == (needed == .schemas ? .passed : .insufficientScope), "\(route) with an app's schemas key")
                // Every other spelling: the same answer for every key, or no route at all.
                for variant in Self.spellings(of: path) {
                    for (name, key) in [("no", nil), ("limited", limited)] + keys.sorted(by: { $0.key < $1.key }).map({ ($0.key.rawValue, Optional($0.value)) }) {
                        let (canonical, _) = try await gate(path, key)
                        let (seen, status) = try await gate(variant, key)
                        #expect(status == .notFound || seen == canonical, "\(method) \(variant) with \(name) key: \(seen), the route gives \(canonical)")
                    }
                }
            }
        }
    }

    /// The application on a fresh SQLite database (or `database`), not started.
    static func application(database: String? = nil) async throws -> ServerApplication {
        var settings = ServerSettings()
        settings.port = 0
        settings.database = try database ?? TestEngine.sqlite.freshDatabase()
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let store = try TestStore.open(try ServerApplication.storeSettings(settings))
        return try await ServerApplication(settings: settings, store: store, keyRing: LiveServer(engine: .sqlite).keyRing, logger: logger,
                                         metrics: PrometheusCollectorRegistry())
    }
}
