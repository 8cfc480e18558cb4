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
@testable import CountersignCLI
@testable import CountersignServer

/// Spend and claims through the API and the CLI (issue 26, item 2).
@Suite struct SpendServerTests {
    static let file = """
        date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency
        2026-11-20,1108187390,example123.skadnetwork,10,US,1000,50,20,1,120.50,USD
        2026-11-21,1108187390,example123.skadnetwork,10,US,1200,60,25,2,130.00,USD

        """

    /// Finding 6 of trust round 4: a storage error no route names was answered with an empty 500 and no log line.
    @Test(arguments: TestEngine.allCases) func aStoreErrorIsAnsweredWithJSONAndLogged(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "ua-team", scopes: [.schemas, .read]).key
        store.close()
        try await server.write { db in try RefusingTrigger.install(on: "spend", message: "disk on fire", db) }
        let log = RecordingLogHandler()
        try await server.run(log: log) { client in
            let answer = try await client.execute(uri: "/v1/spend", method: .post, headers: [.authorization: "Bearer \(key)"],
                                                  body: ByteBuffer(string: Self.file))
            #expect(answer.status == .internalServerError)
            #expect(answer.json?["error"]?.string == "internal_error")
            #expect(answer.json?["message"]?.string?.contains("disk on fire") == false)
        }
        #expect(log.lines.contains { $0.hasPrefix("request failed") && $0.contains("disk on fire") && $0.contains("/v1/spend") })
    }

    @Test(arguments: TestEngine.allCases) func theAPIImportsWholeOrNotAtAllAndRecordsWho(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "ua-team", scopes: [.schemas, .read]).key
        let other = try await store.apiKeys.create(name: "eur-only", scopes: [.schemas], apps: [525_463_029]).key
        store.close()
        try await server.run { client in
            let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
            let imported = try await client.execute(uri: "/v1/spend?file_name=november.csv", method: .post, headers: bearer, body: ByteBuffer(string: Self.file))
            #expect(imported.status == .ok)
            #expect(imported.json?["rows"]?.wholeNumber == 2)
            let bad = Self.file.replacingOccurrences(of: "130.00,USD", with: "-130.00,USD")
            let refused = try await client.execute(uri: "/v1/spend", method: .post, headers: bearer, body: ByteBuffer(string: bad))
            #expect(refused.status == .badRequest)
            #expect(refused.json?["error"]?.string == "invalid_spend")
            #expect(refused.json?["problem_count"]?.wholeNumber == 1)
            guard case .array(let problems)? = refused.json?["problems"], let first = problems.first?.object else { Issue.record("no problems"); return }
            #expect(first["line"]?.wholeNumber == 3)
            #expect(first["column"]?.string == "spend")
            // A default the file does not need is still checked (contract test: currency=null was accepted).
            for (query, field) in [("currency=null", "currency"), ("currency=usd", "currency"), ("ad_network=Not%20a%20network", "ad_network")] {
                let answer = try await client.execute(uri: "/v1/spend?\(query)", method: .post, headers: bearer, body: ByteBuffer(string: Self.file))
                #expect(answer.status == .badRequest, "\(query)")
                #expect(answer.json?["message"]?.string?.hasPrefix(field + ":") == true, "\(query): \(String(buffer: answer.body))")
            }
            let forbidden = try await client.execute(uri: "/v1/spend", method: .post, headers: [.authorization: "Bearer \(other)"], body: ByteBuffer(string: Self.file))
            #expect(forbidden.status == .forbidden)
            let imports = try await client.execute(uri: "/v1/spend/imports", method: .get, headers: bearer)
            guard case .array(let rows)? = imports.json?["rows"], let row = rows.first?.object else { Issue.record("no imports"); return }
            #expect(rows.count == 1)
            #expect(row["imported_by"]?.string == "ua-team")
            #expect(row["file_name"]?.string == "november.csv")
            let rates = try await client.execute(uri: "/v1/rates", method: .post, headers: bearer, body: ByteBuffer(string: "date,from,to,rate\n2026-11-20,EUR,USD,1.0842\n"))
            #expect(rates.status == .ok)
            // The performance report in JSON and CSV says the same, cell for cell.
            let query = "/v1/performance?by=ad_network,campaign,day&from=2026-11-01&to=2026-12-01"
            let json = try await client.execute(uri: query, method: .get, headers: bearer)
            let csv = try await client.execute(uri: query + "&format=csv", method: .get, headers: bearer)
            guard case .array(let rows)? = json.json?["rows"] else { Issue.record("no rows"); return }
            #expect(rows.count == 2)
            let lines = String(buffer: csv.body).split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            let header = try #require(lines.first)
            for (row, line) in zip(rows, lines.dropFirst()) {
                let object = try #require(row.object)
                for (name, cell) in zip(header, line) {
                    let value = object[name] ?? .null
                    let text: String = switch value {
                    case .number(let number): number
                    case .string(let string): string
                    default: ""
                    }
                    #expect(text == cell, "\(name)")
                }
            }
            #expect(rows.first?.object?["claimed_installs"]?.wholeNumber == 20)
            #expect(rows.first?.object?["spend"] == .number("120.50"))
            #expect(rows.first?.object?["cpi"] == .number("6.025"))
        }
        #expect(try await server.scalar("SELECT sum(spend_micros) FROM spend", as: Int64.self) == 250_500_000)
    }

    @Test func theCLINamesEveryBadLineAndStoresNothing() async throws {
        let directory = Checkout.temporaryDirectory()
        let database = directory + "/spend.sqlite"
        let path = directory + "/bad.csv"
        try Self.file.replacingOccurrences(of: "2026-11-21", with: "2026-13-01").replacingOccurrences(of: ",US,1000", with: ",USA,1000")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try await countersign(["spend", "import", path, "--database", database])
        #expect(refused.status == 1)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.contains { $0.hasSuffix("line 2, country: must be a two-letter country code, got \"USA\"") }, "\(refused.stderr)")
        #expect(lines.contains { $0.contains("line 3, day: must be a date") }, "\(refused.stderr)")
        #expect(lines.last?.contains("was not imported: 2 problems") == true, "\(refused.stderr)")
        let good = directory + "/good.csv"
        try Self.file.write(toFile: good, atomically: true, encoding: .utf8)
        let imported = try await countersign(["spend", "import", good, "--database", database])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try JSONParser.parse(Array(imported.stdout.utf8)).object?["rows"]?.wholeNumber == 2)
        let listed = try await countersign(["spend", "imports", "--format", "csv", "--database", database])
        #expect(listed.stdout.contains("good.csv"))
        #expect(!listed.stdout.contains("bad.csv"))
    }

    /// Postback-level reconciliation through the API and the CLI (issue 26, item 5): what was verified, refused or never
    /// arrived, and what the network did not claim; an app-scoped key must name its app.
    @Test(arguments: TestEngine.allCases) func aNetworksListIsCheckedIdentifierByIdentifier(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "analyst", scopes: [.read]).key
        let scoped = try await store.apiKeys.create(name: "one-app", scopes: [.read], apps: [1_108_187_390]).key
        store.close()
        let network = "example123.adattributionkit"
        let sent: [(String, ECPrivateKey, String, HTTPResponse.Status)] = [
            ("R-1", LiveServer.networkKey, "network/0", .ok), ("R-2", LiveServer.networkKey, "network/0", .ok), ("R-3", LiveServer.networkKey, "network/0", .ok),
            ("R-4", try ECPrivateKey.generate(), "network/0", .badRequest), ("R-5", try ECPrivateKey.generate(), "apple-cas-identifier/7", .ok),
        ]
        let list = "postback_identifier\n" + ["R-1", "R-2", "R-4", "R-5", "R-6"].map { Mint.uuid($0).lowercased() }.joined(separator: "\n") + "\n"
        let expected = [
            Mint.uuid("R-1").lowercased(): "verified", Mint.uuid("R-2").lowercased(): "verified", Mint.uuid("R-4").lowercased(): "failed_only",
            Mint.uuid("R-5").lowercased(): "unverifiable_only", Mint.uuid("R-6").lowercased(): "unknown", Mint.uuid("R-3"): "not_claimed",
        ]
        try await server.run { client in
            for (label, signer, keyID, status) in sent {
                let body = try LiveServer.aak(label, { $0.adNetworkID = network; $0.advertisedItemID = 1_108_187_390 }, keyID: keyID, key: signer)
                #expect(try await client.execute(uri: aakPath, method: .post, body: body).status == status, "\(label)")
            }
            let uri = "/v1/reconciliation/postbacks?ad_network=\(network)"
            let response = try await client.execute(uri: uri, method: .post, headers: [.authorization: "Bearer \(key)"], body: ByteBuffer(string: list))
            #expect(response.status == .ok)
            guard case .array(let rows)? = response.json?["rows"] else { Issue.record("no rows: \(String(buffer: response.body))"); return }
            let statuses = Dictionary(uniqueKeysWithValues: rows.compactMap { row in row.object.flatMap { object in
                object["identifier"]?.string.map { ($0, object["status"]?.string ?? "") } } })
            #expect(statuses == expected)
            #expect(response.json?["counts"]?.object?["verified"]?.wholeNumber == 2)
            // A key for one app sees only that app's postbacks: it must say which.
            let scopedHeaders: HTTPFields = [.authorization: "Bearer \(scoped)"]
            #expect(try await client.execute(uri: uri, method: .post, headers: scopedHeaders, body: ByteBuffer(string: list)).status == .forbidden)
            #expect(try await client.execute(uri: uri + "&app=1108187390", method: .post, headers: scopedHeaders, body: ByteBuffer(string: list)).status == .ok)
            let bad = try await client.execute(uri: uri, method: .post, headers: [.authorization: "Bearer \(key)"], body: ByteBuffer(string: "one two\n"))
            #expect(bad.status == .badRequest)
            #expect(bad.json?["message"]?.string?.hasPrefix("line 1:") == true)
            for empty in ["", "postback_identifier\n"] {
                let none = try await client.execute(uri: uri, method: .post, headers: [.authorization: "Bearer \(key)"], body: ByteBuffer(string: empty))
                #expect(none.status == .badRequest)
                #expect(none.json?["message"]?.string?.hasPrefix("no identifiers") == true)
            }
        }
        let path = Checkout.temporaryDirectory() + "/claimed.txt"
        try list.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await countersign(["reconcile", path, "--ad-network", network, "--format", "csv", "--database", server.settings.database])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\r\n").dropFirst().map { $0.split(separator: ",").map(String.init) }
        #expect(Dictionary(uniqueKeysWithValues: lines.map { ($0[0], $0[1]) }) == expected)
        let missing = try await countersign(["reconcile", "/no/such/list", "--database", server.settings.database])
        #expect(missing.status == 2)
        #expect(missing.stderr.split(separator: "\n").count == 1)
    }
}
