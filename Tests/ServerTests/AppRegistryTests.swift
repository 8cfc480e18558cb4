import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import PostbackMint
import Store
import Testing
import TestSupport
@testable import PostbackServer

/// The app registry (issue 15, item 2): with no app registered every app is served; once one is, other apps'
/// postbacks are stored but not counted, and each app's own rules apply.
@Suite struct AppRegistryTests {
    static let registered: Int64 = 1_108_187_390
    static let other: Int64 = 10_738_027_756

    @Test(arguments: TestEngine.allCases) func registeredAppsAreCountedOthersKeptAndRulesApply(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        let reader = try await store.apiKeys.create(name: "reader", scopes: [.read]).key
        store.close()
        try await server.run { client in
            func post(_ id: String, app: Int64, network: String = "example.adattributionkit") async throws -> TestResponse {
                try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak(id) {
                    $0.advertisedItemID = app
                    $0.adNetworkID = network
                })
            }
            // No registry: counted as before.
            #expect(try await post("A-0", app: Self.other).json?["status"]?.string == "stored")
            let body = ByteBuffer(string: #"{"name": "Game", "ad_networks": ["example.adattributionkit"], "currency": "USD", "time_zone": "Europe/Berlin"}"#)
            let refused = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: [.authorization: "Bearer \(reader)"], body: body)
            #expect(refused.status == .forbidden)
            let put = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: [.authorization: "Bearer \(admin)"], body: body)
            #expect(put.status == .ok)
            #expect(put.json?["time_zone"]?.string == "Europe/Berlin")
            let bad = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: [.authorization: "Bearer \(admin)"],
                                               body: ByteBuffer(string: #"{"name": "Game", "time_zone": "Mars/Base"}"#))
            #expect(bad.status == .badRequest)
            #expect(bad.json?["message"]?.string?.hasPrefix("time_zone:") == true)

            #expect(try await post("A-1", app: Self.registered).json?["status"]?.string == "stored")
            let wrongNetwork = try await post("A-2", app: Self.registered, network: "other.example")
            #expect(wrongNetwork.status == .forbidden)
            #expect(wrongNetwork.json?["error"]?.string == "ad_network_not_accepted")
            let unregistered = try await post("A-3", app: Self.other)
            #expect(unregistered.status == .ok)
            #expect(unregistered.json?["status"]?.string == "stored")

            let intake = try await client.execute(uri: "/v1/intake?by=status,reason", method: .get, headers: [.authorization: "Bearer \(reader)"])
            let text = String(buffer: intake.body)
            #expect(text.contains(#"{"status":"not_counted","reason":"app_not_registered","postbacks":1}"#), "\(text)")
            // A report naming the app uses its registered time zone.
            let report = try await client.execute(uri: "/v1/reports?app=\(Self.registered)&by=day", method: .get, headers: [.authorization: "Bearer \(reader)"])
            #expect(report.headers[.init("Countersign-Time-Zone")!] == "Europe/Berlin")
            let listed = try await client.execute(uri: "/v1/apps", method: .get, headers: [.authorization: "Bearer \(reader)"])
            #expect(String(buffer: listed.body).contains("\"name\":\"Game\""))
            let removed = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .delete, headers: [.authorization: "Bearer \(admin)"])
            #expect(removed.status == .noContent)
            #expect(try await post("A-4", app: Self.other).json?["status"]?.string == "stored")
        }
        let counted = try await server.column("SELECT dedup_key FROM postbacks WHERE countable = 1 ORDER BY dedup_key", as: String.self)
        #expect(counted == ["aak:" + Mint.uuid("A-0"), "aak:" + Mint.uuid("A-1"), "aak:" + Mint.uuid("A-4")])
    }

    @Test func theCLIManagesTheRegistryAndSchemasMustMatchItsCurrency() async throws {
        let database = Checkout.temporaryDirectory() + "/apps.sqlite"
        let set = try countersign(["apps", "set", String(Self.registered), "--name", "Game", "--currency", "EUR", "--database", database])
        #expect(set.status == 0, "\(set.stderr)")
        let badZone = try countersign(["apps", "set", String(Self.registered), "--name", "Game", "--time-zone", "Nowhere", "--database", database])
        #expect(badZone.status == 2)
        #expect(badZone.stderr.contains("--time-zone: must be an IANA time zone name"))
        #expect(try countersign(["apps", "list", "--database", database]).stdout.contains("\"currency\": \"EUR\""))
        // game.json is in USD: refused while the registry says EUR.
        let game = Checkout.root.appendingPathComponent("examples/schemas/game.json").path
        let upload = try countersign(["schema", "upload", game, "--database", database])
        #expect(upload.status == 1)
        #expect(upload.stderr.contains("the app registry says app \(Self.registered) reports in EUR"))
        #expect(try countersign(["apps", "remove", String(Self.registered), "--database", database]).status == 0)
        #expect(try countersign(["apps", "remove", String(Self.registered), "--database", database]).status == 1)
    }
}
