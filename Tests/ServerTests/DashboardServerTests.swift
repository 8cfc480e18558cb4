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

/// The API the dashboard reads (intake, postback lookup) and the dashboard's own files (issue 14).
@Suite struct DashboardServerTests {
    static func key(_ server: LiveServer) async throws -> HTTPFields {
        let store = try server.store()
        defer { store.close() }
        return [.authorization: "Bearer \(try await store.apiKeys.create(name: "dashboard").key)"]
    }

    @Test(arguments: TestEngine.allCases) func intakeCountsWhatBecameOfEveryBody(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let headers = try await Self.key(server)
        let stranger = try ECPrivateKey.generate()
        try await server.run { client in
            for body in [try LiveServer.aak("I-1"), try LiveServer.aak("I-1"), try LiveServer.aak("I-1") { $0.countryCode = "GB" },
                         try LiveServer.aak("I-2", keyID: "unknown/9", key: stranger), try LiveServer.aak("I-3", keyID: "network/0", key: stranger)] {
                _ = try await client.execute(uri: aakPath, method: .post, body: body)
            }
            let answer = try await client.execute(uri: "/v1/intake?by=status,reason", method: .get, headers: headers)
            #expect(answer.status == .ok)
            #expect(answer.headers[.init("Countersign-Time-Zone")!] == "UTC")
            let rows = try #require(answer.json?["rows"].flatMap { value -> [JSONValue]? in if case .array(let rows) = value { rows } else { nil } })
            let counts = Dictionary(uniqueKeysWithValues: rows.compactMap { row -> (String, String)? in
                guard let object = row.object, let status = object["status"]?.string, case .number(let count)? = object["postbacks"] else { return nil }
                return ("\(status)/\(object["reason"]?.string ?? "-")", count)
            })
            #expect(counts == ["counted/-": "1", "duplicate/-": "1", "replay/-": "1", "unverifiable/unknown_kid": "1", "rejected/bad_signature": "1"])
            // A rejected body counts under the app it claims (issue 49, finding 11), never under another.
            let app = try await client.execute(uri: "/v1/intake?app=\(AAKPostbackFields(postbackID: "x").advertisedItemID)&status=rejected", method: .get, headers: headers)
            #expect(app.json?["rows"] == .array([.object(JSONObject([JSONMember(key: "status", value: .string("rejected")), JSONMember(key: "postbacks", value: .number("1"))]))]))
            let other = try await client.execute(uri: "/v1/intake?app=1&status=rejected", method: .get, headers: headers)
            #expect(other.json?["rows"] == .array([]))
            let csv = try await client.execute(uri: "/v1/intake?by=day,status&format=csv&tz=Europe/Berlin", method: .get, headers: headers)
            #expect(String(buffer: csv.body).hasPrefix("day,status,postbacks\r\n"))
            for (query, parameter) in [("status=lost", "status"), ("by=colour", "by"), ("window=5", "window"), ("tz=Mars/Base", "tz"), ("limit=1", "limit")] {
                let refused = try await client.execute(uri: "/v1/intake?\(query)", method: .get, headers: headers)
                #expect(refused.status == .badRequest, "\(query)")
                #expect(refused.json?["error"]?.string == "bad_parameter")
                #expect(refused.json?["message"]?.string?.hasPrefix(parameter) == true, "\(query)")
            }
            let anonymous = try await client.execute(uri: "/v1/intake", method: .get)
            #expect(anonymous.status == .unauthorized)
        }
    }

    @Test(arguments: TestEngine.allCases) func lookupShowsEveryCopyAndWhatAReplayChanged(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let headers = try await Self.key(server)
        try await server.run { client in
            for country in [nil, nil, "GB"] {
                _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("L-1") { $0.countryCode = country })
            }
            let identifier = Mint.uuid("L-1")
            for spelling in [identifier, identifier.uppercased()] {
                let answer = try await client.execute(uri: "/v1/postbacks/\(spelling)", method: .get, headers: headers)
                #expect(answer.status == .ok)
                guard case .array(let postbacks)? = answer.json?["postbacks"], let found = postbacks.first?.object else {
                    Issue.record("no postback in \(String(buffer: answer.body))")
                    return
                }
                #expect(postbacks.count == 1)
                #expect(found["verification"]?.object?["outcome"]?.string == "verified")
                guard case .array(let copies)? = found["copies"] else { Issue.record("no copies"); return }
                let dispositions = copies.compactMap { $0.object?["disposition"]?.string }
                #expect(dispositions == ["stored", "duplicate", "replay"])
                #expect(copies.map { $0.object?["stored_copy"] } == [.bool(true), .bool(false), .bool(false)])
                let change = copies.last?.object?["unsigned_changes"]?.object?["country-code"]?.object
                #expect(change?["stored"] == .null)
                #expect(change?["copy"] == .string("GB"))
                #expect(copies[1].object?["unsigned_changes"] == .object(JSONObject()))
            }
            let missing = try await client.execute(uri: "/v1/postbacks/\(Mint.uuid("nobody"))", method: .get, headers: headers)
            #expect(missing.status == .notFound)
            #expect(missing.json?["error"]?.string == "postback_not_found")
            let long = try await client.execute(uri: "/v1/postbacks/\(String(repeating: "a", count: 129))", method: .get, headers: headers)
            #expect(long.status == .badRequest)
            let extra = try await client.execute(uri: "/v1/postbacks/\(identifier)?verbose=1", method: .get, headers: headers)
            #expect(extra.status == .badRequest)
        }
    }

    @Test func dashboardFilesAreServedFromTheBinaryWithAStrictPolicy() async throws {
        var server = LiveServer()
        server.settings.chartLibrary = Checkout.temporaryDirectory() + "/absent/chart.min.js"
        try await server.run { client in
            let page = try await client.execute(uri: "/dashboard", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.headers[.init("Content-Security-Policy")!]?.contains("default-src 'self'") == true)
            #expect(String(buffer: page.body).contains("/dashboard/dashboard.js"))
            for file in DashboardRoutes.files.keys where file != "index.html" {
                let answer = try await client.execute(uri: "/dashboard/\(file)", method: .get)
                #expect(answer.status == .ok, "\(file)")
                #expect(answer.body.readableBytes > 100, "\(file)")
            }
            let unknown = try await client.execute(uri: "/dashboard/secrets.js", method: .get)
            #expect(unknown.status == .notFound)
            #expect(unknown.json?["error"]?.string == "not_found")
            let chart = try await client.execute(uri: "/dashboard/chart.js", method: .get)
            #expect(chart.status == .notFound)
            #expect(chart.json?["error"]?.string == "chart_library_missing")
            #expect(chart.json?["message"]?.string?.contains("libjs-chart.js") == true)
        }
    }

    /// Every module any served module imports is one the server serves, so no page or helper is left out of the binary.
    @Test func everyImportedModuleIsServed() throws {
        var imported = Set<String>()
        for (name, file) in DashboardRoutes.files where name.hasSuffix(".js") {
            for line in String(decoding: file.bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("import ") {
                guard let start = line.range(of: "'./") else { continue }
                imported.insert(String(line[start.upperBound...].prefix { $0 != "'" }))
            }
        }
        #expect(imported.count == 10, "\(imported.sorted())")
        for module in imported { #expect(DashboardRoutes.files[module] != nil, "\(module)") }
    }
}
