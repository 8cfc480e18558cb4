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
            // An ad network the app's entry does not accept: stored, not counted, so a later change can count it.
            let wrongNetwork = try await post("A-2", app: Self.registered, network: "other.example")
            #expect(wrongNetwork.status == .ok)
            #expect(wrongNetwork.json?["status"]?.string == "stored")
            let unregistered = try await post("A-3", app: Self.other)
            #expect(unregistered.status == .ok)
            #expect(unregistered.json?["status"]?.string == "stored")

            // A-3, and A-0, which counted before the registry existed: the registry's first entry has stored postbacks
            // counted again in the background (the request does not wait for it), so the intake shows it a little later.
            var text = ""
            let recounted = try await eventually(within: 60) {
                let intake = try await client.execute(uri: "/v1/intake?by=status,reason", method: .get, headers: [.authorization: "Bearer \(reader)"])
                text = String(buffer: intake.body)
                return text.contains(#"{"status":"not_counted","reason":"app_not_registered","postbacks":2}"#)
            }
            #expect(recounted, "\(text)")
            #expect(text.contains(#"{"status":"not_counted","reason":"ad_network_not_accepted","postbacks":1}"#), "\(text)")
            // A report naming the app uses its registered time zone.
            let report = try await client.execute(uri: "/v1/reports?app=\(Self.registered)&by=day", method: .get, headers: [.authorization: "Bearer \(reader)"])
            #expect(report.headers[.init("Countersign-Time-Zone")!] == "Europe/Berlin")
            let listed = try await client.execute(uri: "/v1/apps", method: .get, headers: [.authorization: "Bearer \(reader)"])
            #expect(String(buffer: listed.body).contains("\"name\":\"Game\""))
            // Registering the app again counts what arrived while the registry left it out (issue 25, item 2): the
            // postbacks already stored follow the rules in force, and so do reports.
            func counted() async throws -> Set<String> {
                Set(try await server.column("SELECT dedup_key FROM postbacks WHERE countable = 1", as: String.self))
            }
            func reportedInstalls() async throws -> Int64? {
                let report = try await client.execute(uri: "/v1/reports", method: .get, headers: [.authorization: "Bearer \(reader)"])
                guard case .array(let rows)? = report.json?["rows"], case .object(let row)? = rows.first else { return 0 }
                return row["postbacks"]?.wholeNumber
            }
            // A-0 counted while there was no registry; once the registry left its app out, it stopped counting.
            #expect(try await eventually(within: 30) { try await counted() == ["aak:" + Mint.uuid("A-1")] })
            let widened = ByteBuffer(string: #"{"name": "Game", "ad_networks": ["example.adattributionkit", "other.example"]}"#)
            #expect(try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: [.authorization: "Bearer \(admin)"], body: widened).status == .ok)
            #expect(try await eventually(within: 30) { try await counted() == Set(["A-1", "A-2"].map { "aak:" + Mint.uuid($0) }) })
            #expect(try await reportedInstalls() == 2)
            let removed = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .delete, headers: [.authorization: "Bearer \(admin)"])
            #expect(removed.status == .noContent)
            #expect(try await post("A-4", app: Self.other).json?["status"]?.string == "stored")
            #expect(try await eventually(within: 30) { try await counted().count == 5 })
            #expect(try await reportedInstalls() == 5)
        }
        let counted = try await server.column("SELECT dedup_key FROM postbacks WHERE countable = 1", as: String.self)
        #expect(Set(counted) == Set(["A-0", "A-1", "A-2", "A-3", "A-4"].map { "aak:" + Mint.uuid($0) }))
        #expect(try await server.column("SELECT reason FROM postbacks WHERE reason IS NOT NULL", as: String.self) == [])
    }

    @Test(arguments: TestEngine.allCases) func reverifyAppliesTheRegistryToStoredPostbacks(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            for (id, app) in [("R-1", Self.registered), ("R-2", Self.other)] {
                _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak(id) { $0.advertisedItemID = app })
            }
        }
        // Registered while no server runs: reverify applies it (and, run again after removal, undoes it).
        #expect(try await countersign(["apps", "set", String(Self.registered), "--name", "Game", "--database", server.settings.database]).status == 0)
        let first = try await countersign(["reverify", "--database", server.settings.database])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try JSONParser.parse(Array(first.stdout.utf8)).object?["recounted"]?.wholeNumber == 1)
        #expect(try await server.column("SELECT dedup_key FROM postbacks WHERE countable = 1", as: String.self) == ["aak:" + Mint.uuid("R-1")])
        #expect(try await countersign(["apps", "remove", String(Self.registered), "--database", server.settings.database]).status == 0)
        let second = try await countersign(["reverify", "--database", server.settings.database])
        #expect(try JSONParser.parse(Array(second.stdout.utf8)).object?["recounted"]?.wholeNumber == 1)
        #expect(try await server.scalar("SELECT count(*) FROM postbacks WHERE countable = 1", as: Int.self) == 2)
    }

    /// Display spoofing: an app or ad network name holding a bidi override, a zero-width character or a noncharacter
    /// is refused with a 400 naming the field, through the API and the CLI alike, and nothing is stored.
    @Test(arguments: TestEngine.allCases) func namesThatDisguiseThemselvesAreRefused(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin, .schemas, .read]).key
        store.close()
        try await server.run { client in
            let bearer: HTTPFields = [.authorization: "Bearer \(admin)"]
            for name in [#"Game\u202Eemag"#, #"\u200BGame"#, #"Ga\u00ADme"#, #"Game\uFFFF"#] {
                let body = ByteBuffer(string: #"{"name": "\#(name)"}"#)
                let app = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: bearer, body: body)
                #expect(app.status == .badRequest, "\(name)")
                #expect(app.json?["error"]?.string == "bad_parameter")
                #expect(app.json?["message"]?.string?.hasPrefix("name: must be 1 to 200 characters without control, format (bidi, zero-width)") == true,
                        "\(String(buffer: app.body))")
                let network = try await client.execute(uri: "/v1/ad-networks/example123.skadnetwork", method: .put, headers: bearer, body: body)
                #expect(network.status == .badRequest, "\(name)")
                #expect(network.json?["message"]?.string?.hasPrefix("name:") == true, "\(String(buffer: network.body))")
            }
            let plain = try await client.execute(uri: "/v1/apps/\(Self.other)", method: .put, headers: bearer, body: ByteBuffer(string: #"{"name": "Café 🎮"}"#))
            #expect(plain.status == .ok)
            #expect(plain.json?["name"]?.string == "Café 🎮")
        }
        let cli = try await countersign(["apps", "set", String(Self.registered), "--name", "Game\u{202E}emag", "--database", server.settings.database])
        #expect(cli.status == 2)
        #expect(cli.stderr.contains("--name: must be 1 to 200 characters without control, format"), "\(cli.stderr)")
        #expect(try await server.scalar("SELECT count(*) FROM apps WHERE app = \(Self.registered)", as: Int.self) == 0)
        #expect(try await server.scalar("SELECT count(*) FROM ad_networks", as: Int.self) == 0)
    }

    @Test func theCLIManagesTheRegistryAndSchemasMustMatchItsCurrency() async throws {
        let database = Checkout.temporaryDirectory() + "/apps.sqlite"
        let set = try await countersign(["apps", "set", String(Self.registered), "--name", "Game", "--currency", "EUR", "--database", database])
        #expect(set.status == 0, "\(set.stderr)")
        let badZone = try await countersign(["apps", "set", String(Self.registered), "--name", "Game", "--time-zone", "Nowhere", "--database", database])
        #expect(badZone.status == 2)
        #expect(badZone.stderr.contains("--time-zone: must be an IANA time zone name"))
        let listed = try await countersign(["apps", "list", "--format", "json", "--database", database])
        guard case .array(let apps)? = try JSONParser.parse(Array(listed.stdout.utf8)).object?["rows"] else { Issue.record("no rows: \(listed.stdout)"); return }
        #expect(apps.first?.object?["currency"] == .string("EUR"))
        // game.json is in USD: refused while the registry says EUR.
        let game = Checkout.root.appendingPathComponent("examples/schemas/game.json").path
        let upload = try await countersign(["schema", "upload", game, "--database", database])
        #expect(upload.status == 1)
        #expect(upload.stderr.contains("the app registry says app \(Self.registered) reports in EUR"))
        #expect(try await countersign(["apps", "remove", String(Self.registered), "--database", database]).status == 0)
        #expect(try await countersign(["apps", "remove", String(Self.registered), "--database", database]).status == 1)
    }

    /// Setup health through the API and the CLI (issue 26, item 6): a copy that arrives at the app's copy domain is told
    /// from a network's postback and a forwarded one; the app says whether copies arrive; a key for one app sees it only.
    @Test(arguments: TestEngine.allCases) func setupHealthTellsDeveloperCopiesFromTheRest(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        let scoped = try await store.apiKeys.create(name: "other-app", scopes: [.read], apps: [AppID(Self.other)]).key
        store.close()
        try await server.run(.live) { client in
            let bearer: HTTPFields = [.authorization: "Bearer \(admin)"]
            let badDomain = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: bearer,
                                                     body: ByteBuffer(string: #"{"name": "Puzzle", "copy_domain": "https://example.com/"}"#))
            #expect(badDomain.status == .badRequest)
            #expect(badDomain.json?["message"]?.string?.hasPrefix("copy_domain:") == true)
            let put = try await client.execute(uri: "/v1/apps/\(Self.registered)", method: .put, headers: bearer,
                                               body: ByteBuffer(string: #"{"name": "Puzzle", "copy_domain": "example.com"}"#))
            #expect(put.json?["copy_domain"]?.string == "example.com")
            // As devices and networks send them: Apple's copy to the app's domain (with a port, in capitals), the
            // network's own to its host, one forwarded, and one forgery to the copy domain.
            let port = try #require(client.port)
            let sends: [(path: String, host: String, body: ByteBuffer)] = [
                (aakPath, "EXAMPLE.com:443", try LiveServer.aak("H-1") { $0.advertisedItemID = Self.registered }),
                (aakPath, "example.com", try LiveServer.aak("H-2") { $0.advertisedItemID = Self.registered }),
                (aakPath, "postbacks.network.example", try LiveServer.aak("H-1") { $0.advertisedItemID = Self.registered }),
                ("/postbacks", "example.com", try LiveServer.aak("H-3") { $0.advertisedItemID = Self.registered }),
                (aakPath, "example.com", try LiveServer.aak("H-4", { $0.advertisedItemID = Self.registered }, key: try ECPrivateKey.generate())),
                (aakPath, "example.com", try LiveServer.aak("H-5") { $0.advertisedItemID = Self.other }),
            ]
            for send in sends {
                let connection = try RawConnection(port: port)
                let body = String(buffer: send.body)
                connection.send("POST \(send.path) HTTP/1.1\r\nHost: \(send.host)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
                _ = await connection.readUntilClosed()
            }
            let status = try await client.execute(uri: "/v1/setup", method: .get, headers: bearer)
            #expect(status.status == .ok)
            guard case .array(let rows)? = status.json?["rows"], case .array(let apps)? = status.json?["apps"] else {
                Issue.record("no status: \(String(buffer: status.body))"); return
            }
            let byChannel = Dictionary(grouping: rows.compactMap(\.object).filter { $0["app"]?.wholeNumber == Self.registered }) { $0["channel"]?.string ?? "" }
            #expect(byChannel["developer_copy"]?.first?["arrivals"]?.wholeNumber == 3)
            #expect(byChannel["developer_copy"]?.first?["verified"]?.wholeNumber == 2)
            #expect(byChannel["developer_copy"]?.first?["invalid"]?.wholeNumber == 1)
            #expect(byChannel["developer_copy"]?.first?["failing_share"] == .number("0.3333"))
            #expect(byChannel["direct"]?.first?["arrivals"]?.wholeNumber == 1)
            #expect(byChannel["forwarded"]?.first?["arrivals"]?.wholeNumber == 1)
            let summaries = Dictionary(uniqueKeysWithValues: apps.compactMap(\.object).map { ($0["app"]?.wholeNumber ?? 0, $0) })
            #expect(summaries[Self.registered]?["developer_copies"]?.string == "arriving")
            // The forgery sent to the copy domain is counted apart from the copies Apple signed (trust round 4, finding 7).
            #expect(summaries[Self.registered]?["verified_copies"]?.wholeNumber == 2)
            #expect(summaries[Self.registered]?["unverified_copies"]?.wholeNumber == 1)
            #expect(summaries[Self.other]?["developer_copies"]?.string == "not_configured")
            // A key for the other app sees that app only, and may not ask for this one.
            let scopedHeaders: HTTPFields = [.authorization: "Bearer \(scoped)"]
            let mine = try await client.execute(uri: "/v1/setup", method: .get, headers: scopedHeaders)
            guard case .array(let visible)? = mine.json?["rows"] else { Issue.record("no rows"); return }
            #expect(!visible.isEmpty && visible.allSatisfy { $0.object?["app"]?.wholeNumber == Self.other })
            #expect(try await client.execute(uri: "/v1/setup?app=\(Self.registered)", method: .get, headers: scopedHeaders).status == .forbidden)
            #expect(try await client.execute(uri: "/v1/setup?days=0", method: .get, headers: bearer).status == .badRequest)
            // The counts answered at once came partly from the receiver's memory; once it is idle they are in the
            // database for every other process (the CLI below, other receivers).
            #expect(try await eventually(within: 30) {
                try await server.scalar("SELECT sum(arrivals) FROM arrivals_daily", as: Int.self) == sends.count
            })
        }
        let table = try await countersign(["apps", "status", "--database", server.settings.database])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("\(Self.registered) (Puzzle): developer copies arriving at example.com"), "\(table.stdout)")
        #expect(table.stdout.contains("\(Self.other): no copy domain registered"), "\(table.stdout)")
        let refused = try await countersign(["apps", "set", "1", "--name", "x", "--copy-domain", "Example.com", "--database", server.settings.database])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--copy-domain: must be a domain name"), "\(refused.stderr)")
    }
}
