import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import Postback
import PostbackMint
import Store
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// API keys with scopes and app limits, the bearer challenge, and a protected /metrics (issue 15, item 4).
@Suite struct APIKeyScopeTests {
    static let usdApp: AppID = 1_108_187_390
    static let eurApp: AppID = 525_463_029

    static func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    @Test(arguments: TestEngine.allCases) func eachScopeIsAllowedWhereItShouldBeAndRefusedElsewhere(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.metricsRequireKey = true
        let store = try server.store()
        let read = try await store.apiKeys.create(name: "read", scopes: [.read]).key
        let schemas = try await store.apiKeys.create(name: "schemas", scopes: [.schemas]).key
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        let metrics = try await store.apiKeys.create(name: "metrics", scopes: [.metrics]).key
        let limited = try await store.apiKeys.create(name: "usd", scopes: [.read, .schemas], apps: [Self.usdApp]).key
        let revoked = try await store.apiKeys.create(name: "gone")
        #expect(try await store.apiKeys.revoke(id: revoked.record.id))
        store.close()
        let schema = ByteBuffer(bytes: try ExampleSchema.document("game"))
        try await server.run { client in
            func status(_ uri: String, _ method: HTTPRequest.Method = .get, key: String?, body: ByteBuffer? = nil) async throws -> TestResponse {
                try await client.execute(uri: uri, method: method, headers: key.map(Self.bearer) ?? [:], body: body)
            }
            // read: reports yes, schema upload no.
            #expect(try await status("/v1/reports", key: read).status == .ok)
            let refused = try await status("/v1/schemas/\(Self.usdApp)", .put, key: read, body: schema)
            #expect(refused.status == .forbidden)
            #expect(refused.json?["error"]?.string == "insufficient_scope")
            #expect(refused.headers[.wwwAuthenticate]?.contains("error=\"insufficient_scope\", scope=\"schemas\"") == true)
            // schemas: upload yes, reading reports no.
            #expect(try await status("/v1/schemas/\(Self.usdApp)", .put, key: schemas, body: schema).status == .ok)
            #expect(try await status("/v1/reports", key: schemas).status == .forbidden)
            // admin: everything.
            #expect(try await status("/v1/reports", key: admin).status == .ok)
            #expect(try await status("/v1/ad-networks/example.adattributionkit", .put, key: admin, body: ByteBuffer(string: #"{"name": "N"}"#)).status == .ok)
            #expect(try await status("/metrics", key: admin).status == .ok)
            // metrics: /metrics only, and /metrics needs it.
            #expect(try await status("/metrics", key: metrics).status == .ok)
            #expect(try await status("/metrics", key: read).status == .forbidden)
            let anonymous = try await status("/metrics", key: nil)
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate] == "Bearer realm=\"countersign\"")
            #expect(try await status("/v1/reports", key: metrics).status == .forbidden)
            // A key limited to an app: its app only, named in the request.
            #expect(try await status("/v1/reports?app=\(Self.usdApp)", key: limited).status == .ok)
            let unnamed = try await status("/v1/reports", key: limited)
            #expect(unnamed.status == .forbidden)
            #expect(unnamed.json?["error"]?.string == "app_not_allowed")
            #expect(unnamed.json?["message"]?.string?.contains("\(Self.usdApp)") == true)
            #expect(try await status("/v1/conversions?app=\(Self.eurApp)", key: limited).status == .forbidden)
            #expect(try await status("/v1/intake?app=\(Self.usdApp)", key: limited).status == .ok)
            #expect(try await status("/v1/schemas/\(Self.eurApp)", .put, key: limited, body: schema).status == .forbidden)
            #expect(try await status("/v1/names/\(Self.eurApp)", key: limited).status == .forbidden)
            #expect(try await status("/v1/names/\(Self.usdApp)", key: limited).status == .ok)
            #expect(try await status("/v1/ad-networks/x.example", .put, key: limited, body: ByteBuffer(string: #"{"name": "N"}"#)).status == .forbidden)
            #expect(try await status("/v1/adservices/jobs", key: limited).status == .forbidden)
            // 401s carry the bearer challenge; the scheme name is case-insensitive.
            let unknown = try await status("/v1/reports", key: "cs_unknown")
            #expect(unknown.status == .unauthorized)
            #expect(unknown.headers[.wwwAuthenticate] == "Bearer realm=\"countersign\", error=\"invalid_token\"")
            #expect(try await status("/v1/reports", key: revoked.key).status == .unauthorized)
            let missing = try await status("/v1/reports", key: nil)
            #expect(missing.headers[.wwwAuthenticate] == "Bearer realm=\"countersign\"")
            let lowercase = try await client.execute(uri: "/v1/reports", method: .get, headers: [.authorization: "bearer \(read)"])
            #expect(lowercase.status == .ok)
        }
    }

    @Test(arguments: TestEngine.allCases) func aKeyLimitedToAnAppDoesNotSeeOtherAppsPostbacks(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let limited = try await store.apiKeys.create(name: "eur", scopes: [.read], apps: [Self.eurApp]).key
        let everything = try await store.apiKeys.create(name: "all", scopes: [.read]).key
        store.close()
        try await server.run { client in
            _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("S-1"))
            let path = "/v1/postbacks/\(Mint.uuid("S-1"))"
            #expect(try await client.execute(uri: path, method: .get, headers: Self.bearer(everything)).status == .ok)
            let hidden = try await client.execute(uri: path, method: .get, headers: Self.bearer(limited))
            #expect(hidden.status == .notFound)
        }
    }

    @Test func theCLIGrantsScopesAndApps() async throws {
        let database = Checkout.temporaryDirectory() + "/keys.sqlite"
        let created = try await countersign(["apikey", "create", "--name", "dash", "--scope", "read", "--app", "1108187390", "--database", database])
        #expect(created.status == 0)
        let object = try #require(try JSONParser.parse(Array(created.stdout.utf8)).object)
        #expect(object["scopes"] == .array([.string("read")]))
        #expect(object["apps"] == .array([.number("1108187390")]))
        let defaults = try await countersign(["apikey", "create", "--name", "plain", "--database", database])
        #expect(try JSONParser.parse(Array(defaults.stdout.utf8)).object?["scopes"] == .array([.string("read"), .string("schemas")]))
        let wrong = try await countersign(["apikey", "create", "--name", "x", "--scope", "write", "--database", database])
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("use read, schemas, admin, metrics"))
    }
}
