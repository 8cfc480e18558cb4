import CountersignEncoder
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import Postback
import Store
import TestSupport
@testable import CountersignServer

/// `GET /v1/schemas/{app}/published`: the encoder's form of the current revision, with an ETag, readable by the
/// encoder scope (or read), by no key when the app makes it public, and by nothing else.
@Suite struct PublishedSchemaTests {
    static let app = "1108187390"
    static let path = "/v1/schemas/\(app)/published"

    @Test(arguments: TestEngine.allCases) func accessFollowsTheAppsSettingAndTheKeysScope(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        defer { store.close() }
        let encoder = try await store.apiKeys.create(name: "Game app", scopes: [.encoder], apps: [AppID(Self.app)!]).key
        let otherApp = try await store.apiKeys.create(name: "network", scopes: [.encoder], apps: [AppID("42")!]).key
        let reader = try await store.apiKeys.create(name: "analyst", scopes: [.read]).key
        let uploader = try await store.apiKeys.create(name: "uploader", scopes: [.schemas]).key
        try await server.run { client in
            #expect(try await client.execute(uri: Self.path, method: .get, headers: [.authorization: "Bearer \(encoder)"]).status == .notFound, "no schema yet")
            let document = Array(try Data(contentsOf: Checkout.root.appendingPathComponent("examples/schemas/game.json")))
            let put = try await client.execute(uri: "/v1/schemas/\(Self.app)", method: .put, headers: [.authorization: "Bearer \(uploader)"], body: ByteBuffer(bytes: document))
            #expect(put.status == .ok)

            let answers: [(String?, HTTPResponse.Status, String?)] = [
                (nil, .unauthorized, "missing_api_key"), (uploader, .forbidden, "insufficient_scope"),
                (otherApp, .forbidden, "app_not_allowed"), (encoder, .ok, nil), (reader, .ok, nil),
            ]
            for (key, status, code) in answers {
                let response = try await client.execute(uri: Self.path, method: .get, headers: key.map { [.authorization: "Bearer \($0)"] } ?? [:])
                #expect(response.status == status, "\(code ?? "ok")")
                if let code { #expect(response.json?["error"] == .string(code)) }
            }
            let other = try await client.execute(uri: "/v1/schemas/\(Self.app)", method: .get, headers: [.authorization: "Bearer \(encoder)"])
            #expect(other.status == .forbidden && other.json?["error"] == .string("insufficient_scope"), "the encoder scope reads nothing else")

            let ok = try await client.execute(uri: Self.path, method: .get, headers: [.authorization: "Bearer \(encoder)"])
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let published = try decoder.decode(EncodingSchema.self, from: Data(buffer: ok.body))
            #expect(published.app == Self.app && published.revision == 1 && published.versions.count == 2)
            #expect(published.versions.last?.install?[0].fine.count == 64)
            let tag = try #require(ok.headers[.eTag])
            #expect(ok.headers[.cacheControl] == "private, max-age=300")
            let again = try await client.execute(uri: Self.path, method: .get, headers: [.authorization: "Bearer \(encoder)", .ifNoneMatch: tag])
            #expect(again.status == .notModified && again.headers[.eTag] == tag && again.body.readableBytes == 0)

            try await store.apps.set(AppRegistry.Entry(app: AppID(Self.app)!, name: "Game", publicSchema: true))
            let open = try await client.execute(uri: Self.path, method: .get)
            #expect(open.status == .ok && open.headers[.cacheControl] == "public, max-age=300" && open.headers[.eTag] == tag)
            let stillPrivate = try await client.execute(uri: "/v1/schemas/\(Self.app)", method: .get)
            #expect(stillPrivate.status == .unauthorized, "only the published form is public")
            // A new revision is published at once, with a new ETag; the old one no longer matches.
            let shop = Array(try Data(contentsOf: Checkout.root.appendingPathComponent("examples/schemas/game.json")))
            let changed = Array(String(decoding: shop, as: UTF8.self).replacingOccurrences(of: "\"Dragon Harbor (game)\"", with: "\"Dragon Harbor\"").utf8)
            #expect(changed != shop, "the name to change is in the example")
            #expect(try await client.execute(uri: "/v1/schemas/\(Self.app)", method: .put, headers: [.authorization: "Bearer \(uploader)"], body: ByteBuffer(bytes: changed)).status == .ok)
            let second = try await client.execute(uri: Self.path, method: .get, headers: [.ifNoneMatch: tag])
            #expect(second.status == .ok && second.headers[.init("Schema-Revision")!] == "2")
        }
    }
}
