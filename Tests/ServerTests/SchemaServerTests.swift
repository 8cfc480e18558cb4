import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import PostbackMint
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// Schemas over HTTP: upload with an API key, 422 for invalid ones, decoding at ingest and on upload, redecode.
@Suite struct SchemaServerTests {
    static let gameApp = "1108187390"
    static let shopApp = "10738027756"

    static func example(_ name: String) throws -> ByteBuffer {
        ByteBuffer(bytes: Array(try Data(contentsOf: Checkout.root.appendingPathComponent("examples/schemas/\(name).json"))))
    }

    func apiKey(_ server: LiveServer) async throws -> String {
        let store = try server.store()
        defer { store.close() }
        return try await store.apiKeys.create(name: "test").key
    }

    func post(_ client: some TestClientProtocol, app: String, fine: Int, id: String) async throws -> TestResponse {
        try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak(id) {
            $0.advertisedItemID = Int64(app)!
            $0.conversionValue = fine
            $0.sourceIdentifier = "1123"
        })
    }

    @Test(arguments: TestEngine.allCases) func authIsRequiredAndChecked(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await apiKey(server)
        let store = try server.store()
        defer { store.close() }
        let revoked = try await store.apiKeys.create(name: "old")
        #expect(try await store.apiKeys.revoke(id: revoked.record.id))
        try await server.run { client in
            let cases: [(String, HTTPFields, String)] = [
                ("/v1/schemas/\(Self.gameApp)", [:], "missing_api_key"),
                ("/v1/schemas/\(Self.gameApp)", [.authorization: "Bearer cs_wrong"], "invalid_api_key"),
                ("/v1/schemas/\(Self.gameApp)", [.authorization: "Bearer \(revoked.key)"], "invalid_api_key"),
                ("/v1/schemas/\(Self.gameApp)?api_key=\(key)", [:], "api_key_in_query"),
                ("/v1/schemas/\(Self.gameApp)?token=\(key)", [.authorization: "Bearer \(key)"], "api_key_in_query"),
            ]
            for (uri, headers, code) in cases {
                let response = try await client.execute(uri: uri, method: .get, headers: headers)
                #expect(response.status == .unauthorized, "\(uri)")
                #expect(response.json?["error"] == .string(code))
            }
            let allowed = try await client.execute(uri: "/v1/schemas/\(Self.gameApp)", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(allowed.status == .notFound)
            #expect(allowed.json?["error"] == .string("schema_not_found"))
        }
    }

    @Test(arguments: TestEngine.allCases) func invalidUploadGets422WithTheCheckMessages(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await apiKey(server)
        try await server.run { client in
            let broken = ByteBuffer(string: #"{"format": "countersign.conversion-schema/1", "app": "1108187390", "versions": [{"version": 1, "effective-from": "2026-01-01", "install": {"windows": {"0": {"fine": {"values": [{"value": 64, "events": []}]}}}}}]}"#)
            let response = try await client.execute(uri: "/v1/schemas/\(Self.gameApp)", method: .put, headers: [.authorization: "Bearer \(key)"], body: broken)
            #expect(response.status == .unprocessableContent)
            #expect(response.json?["error"] == .string("invalid_schema"))
            guard case .array(let diagnostics) = response.json?["diagnostics"] else { Issue.record("no diagnostics"); return }
            let first = diagnostics.first?.object
            #expect(first?["path"] == .string("$.versions[0].install.windows.0.fine.values[0]"))
            #expect(first?["message"] == .string("value 64 is out of range 0-63"))
            let mismatch = try await client.execute(uri: "/v1/schemas/\(Self.shopApp)", method: .put, headers: [.authorization: "Bearer \(key)"],
                                                    body: try Self.example("game"))
            #expect(mismatch.status == .unprocessableContent)
        }
    }

    @Test(arguments: TestEngine.allCases) func ingestDecodesWithProvenanceAndWaitingPostbacksDecodeInTheBackground(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await apiKey(server)
        try await server.run { client in
            // Before any schema: stored undecoded.
            #expect(try await post(client, app: Self.gameApp, fine: 19, id: "W1").status == .ok)
            let upload = try await client.execute(uri: "/v1/schemas/\(Self.gameApp)", method: .put, headers: [.authorization: "Bearer \(key)"],
                                                  body: try Self.example("game"))
            #expect(upload.status == .ok)
            #expect(upload.json?["revision"] == .number("1"))
            // The upload answers at once; the postback stored before it is decoded in the background, as its progress shows.
            #expect(upload.json?["waiting_postbacks"] == .number("1"))
            var waiting: String?
            for _ in 0..<1_000 {
                let progress = try await client.execute(uri: "/v1/schemas/\(Self.gameApp)", method: .get, headers: [.authorization: "Bearer \(key)"])
                waiting = progress.headers[.init("Schema-Waiting-Postbacks")!]
                if waiting == "0" { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(waiting == "0")
            #expect(try await post(client, app: Self.gameApp, fine: 63, id: "W2").status == .ok)
            #expect(try await post(client, app: Self.shopApp, fine: 5, id: "W3").status == .ok)
            let fetched = try await client.execute(uri: "/v1/schemas/\(Self.gameApp)", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(fetched.headers[.init("Schema-Revision")!] == "1")
            #expect(fetched.json?["app"] == .string(Self.gameApp))
        }
        let rows = try await server.rows("SELECT postback_identifier, decode_status, schema_revision, schema_version, revenue_min, revenue_max, source_json FROM postbacks ORDER BY id")
        #expect(try rows.map { try $0.get("decode_status", as: String?.self) } == ["decoded", "decoded", nil])
        #expect(try rows[0].get("schema_revision", as: Int.self) == 1)
        #expect(try rows[0].get("revenue_min", as: Double.self) == 1.99)
        #expect(try rows[1].get("revenue_max", as: Double.self) == 999.99)
        #expect(try rows[0].get("source_json", as: String.self).contains("Summer sale"))
        let events = try await server.column("SELECT name FROM postback_events ORDER BY postback_id, event_index", as: String.self)
        #expect(events == ["purchase", "level_5_reached", "purchase", "level_20_reached"])
    }

    @Test(arguments: TestEngine.allCases) func redecodeChangesHistoryAndLeavesOtherAppsAlone(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await apiKey(server)
        try await server.run { client in
            for (app, name) in [(Self.gameApp, "game"), (Self.shopApp, "shop")] {
                let upload = try await client.execute(uri: "/v1/schemas/\(app)", method: .put, headers: [.authorization: "Bearer \(key)"], body: try Self.example(name))
                #expect(upload.status == .ok)
            }
            #expect(try await post(client, app: Self.gameApp, fine: 1, id: "R1").status == .ok)
            #expect(try await post(client, app: Self.shopApp, fine: 2, id: "R2").status == .ok)
            // A corrected game schema: value 1 now means a larger purchase.
            var text = String(buffer: try Self.example("game"))
            text = text.replacingOccurrences(of: "\"name\": \"Dragon Harbor (game)\"", with: "\"name\": \"Dragon Harbor (corrected)\"")
            text = text.replacingOccurrences(of: "\"min\": 0.01", with: "\"min\": 0.5")
            let corrected = try await client.execute(uri: "/v1/schemas/\(Self.gameApp)", method: .put, headers: [.authorization: "Bearer \(key)"], body: ByteBuffer(string: text))
            #expect(corrected.json?["revision"] == .number("2"))
        }
        let before = try await server.rows("SELECT schema_revision, revenue_min FROM postbacks ORDER BY id")
        #expect(try before.map { try $0.get("schema_revision", as: Int.self) } == [1, 1])
        let result = try await countersign(["redecode", "--app", Self.gameApp, "--database", server.settings.database])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("redecoded 1/1"))
        let after = try await server.rows("SELECT schema_revision, revenue_min FROM postbacks ORDER BY id")
        #expect(try after.map { try $0.get("schema_revision", as: Int.self) } == [2, 1], "the shop postback keeps revision 1")
        #expect(try after[0].get("revenue_min", as: Double.self) == 0.5)
        #expect(try after[1].get("revenue_min", as: Double.self) == before[1].get("revenue_min", as: Double.self))
        let eventRevisions = try await server.column("SELECT schema_revision FROM postback_events ORDER BY postback_id", as: Int.self)
        #expect(eventRevisions == [2, 1])
    }
}

/// The schema commands on files.
@Suite struct SchemaCLITests {
    @Test(arguments: ["game", "subscription", "shop"])
    func examplesCheck(name: String) async throws {
        let result = try await countersign(["schema", "check", Checkout.root.appendingPathComponent("examples/schemas/\(name).json").path])
        #expect(result.status == 0)
        #expect(result.stdout.contains("ok (") && result.stdout.contains("0 warning(s)"))
    }

    @Test func checkExitsOneWithPathsOnErrors() async throws {
        let path = Checkout.temporaryDirectory() + "/bad.json"
        try Data(#"{"format": "countersign.conversion-schema/1", "app": "1", "versionz": []}"#.utf8).write(to: URL(fileURLWithPath: path))
        let result = try await countersign(["schema", "check", path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("error: $.versionz: unknown key \"versionz\""))
        #expect(result.stdout.contains("error: $: missing required key \"versions\""))
        #expect(try await countersign(["schema", "check", "/no/such/file"]).status == 2)
    }

    @Test func explainValueCoarseAndPostback() async throws {
        let game = Checkout.root.appendingPathComponent("examples/schemas/game.json").path
        let fine = try await countersign(["schema", "explain", game, "--value", "19", "--window", "0", "--at", "2026-11-20T00:00:00Z"])
        #expect(fine.status == 0)
        let document = try #require(try JSONParser.parse(Array(fine.stdout.utf8)).object)
        #expect(document["revenue"]?.object?["min"] == .number("1.99"))
        let coarse = try await countersign(["schema", "explain", game, "--coarse", "high", "--window", "2", "--type", "re-engagement"])
        #expect(coarse.status == 0)
        #expect(coarse.stdout.contains("\"purchase\""))
        let postbackPath = Checkout.temporaryDirectory() + "/postback.json"
        var fields = AAKPostbackFields(postbackID: Mint.uuid("E1"))
        fields.advertisedItemID = 1108187390
        fields.conversionValue = 63
        try Data(try Mint.aak(fields, key: LiveServer.networkKey, keyID: "network/0")).write(to: URL(fileURLWithPath: postbackPath))
        let fromPostback = try await countersign(["schema", "explain", game, "--postback", postbackPath, "--keys-dir", Checkout.keys])
        #expect(fromPostback.status == 0, "\(fromPostback.stderr)")
        #expect(fromPostback.stdout.contains("level_20_reached"))
        #expect(try await countersign(["schema", "explain", game, "--value", "64", "--window", "0"]).status == 2)
    }

    @Test func importCSVProducesACheckedSchema() async throws {
        let csv = Checkout.temporaryDirectory() + "/mapping.csv"
        try Data("value,coarse,window,event,min revenue,max revenue\n0,,0,install,,\n1,,0,purchase,0.99,4.99\n,low,1,retained,,\n".utf8).write(to: URL(fileURLWithPath: csv))
        let result = try await countersign(["schema", "import-csv", csv, "--app", "42"])
        #expect(result.status == 0, "\(result.stderr)")
        let schemaPath = Checkout.temporaryDirectory() + "/schema.json"
        try Data(result.stdout.utf8).write(to: URL(fileURLWithPath: schemaPath))
        #expect(try await countersign(["schema", "check", schemaPath]).status == 0)
    }
}

/// `countersign apikey`.
@Suite struct APIKeyCLITests {
    @Test func createListRevoke() async throws {
        let database = Checkout.temporaryDirectory() + "/keys.sqlite"
        let created = try await countersign(["apikey", "create", "--name", "analyst", "--database", database])
        #expect(created.status == 0)
        let document = try #require(try JSONParser.parse(Array(created.stdout.utf8)).object)
        let key = try #require(document["key"]?.string)
        #expect(key.hasPrefix("cs_"))
        let listed = try await countersign(["apikey", "list", "--database", database])
        #expect(listed.stdout.contains("analyst"))
        #expect(!listed.stdout.contains(key), "the key itself is never listed")
        let stored = try await DatabaseQueue(path: database).read { db in try Data.fetchOne(db, sql: "SELECT key_hash FROM api_keys") }
        #expect(stored?.count == 32)
        #expect(try await countersign(["apikey", "revoke", "1", "--database", database]).status == 0)
        #expect(try await countersign(["apikey", "revoke", "1", "--database", database]).status == 1)
    }
}
