import AsyncHTTPClient
import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import JWS
import PostbackMint
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

@Suite struct LiveServerTests {
    @Test(arguments: TestEngine.allCases) func verifiedDuplicateAndReplayAreAcknowledgedAndCountedOnce(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            let first = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("P1"))
            #expect(first.status == .ok)
            #expect(first.json?["status"] == .string("stored"))
            let again = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("P1"))
            #expect(again.json?["status"] == .string("duplicate"))
            let replay = try await client.execute(uri: "/.well-known/appattribution/report-attribution", method: .post,
                                                  body: try LiveServer.aak("P1") { $0.conversionValue = 63 })
            #expect(replay.status == .ok)
            #expect(replay.json?["status"] == .string("replay"))
        }
        let store = try server.store()
        let counts = try #require(try await store.rows("SELECT count(*) AS n, sum(countable) AS c, sum(duplicates) AS d, sum(replays) AS r FROM postbacks").first)
        #expect(try counts.get("n", as: Int.self) == 1)
        #expect(try counts.get("c", as: Int.self) == 1)
        #expect(try counts.get("d", as: Int.self) == 1)
        #expect(try counts.get("r", as: Int.self) == 1)
        #expect(try await store.scalar("SELECT count(*) FROM receipts", as: Int.self) == 3)
    }

    @Test(arguments: TestEngine.allCases) func developmentPostbacksDependOnTheSetting(engine: TestEngine) async throws {
        let body = ByteBuffer(bytes: try Checkout.appleExample("aak-dev1-reengagement-fine"))
        let strict = LiveServer(engine: engine)
        try await strict.run { client in
            let response = try await client.execute(uri: aakPath, method: .post, body: body)
            #expect(response.status == .forbidden)
            #expect(response.json?["error"] == .string("development_not_allowed"))
            #expect(response.json?["message"]?.string?.isEmpty == false)
        }
        #expect(try await strict.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 0)
        #expect(try await strict.scalar("SELECT reason FROM receipts", as: String.self) == "development_not_allowed")
        let relaxed = LiveServer(engine: engine, allowDevelopment: true)
        try await relaxed.run { client in
            let response = try await client.execute(uri: aakPath, method: .post, body: body)
            #expect(response.status == .ok)
        }
        let row = try #require(try await relaxed.rows("SELECT environment, countable, conversion_value, conversion_class FROM postbacks").first)
        #expect(try row.get("environment", as: String.self) == "development")
        #expect(try row.get("countable", as: Int.self) == 0)
        #expect(try row.get("conversion_value", as: Int.self) == 24)
        #expect(try row.get("conversion_class", as: String.self) == "re-engagement")
    }

    @Test(arguments: TestEngine.allCases) func unverifiableIsKeptButNotCounted(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            let response = try await client.execute(uri: "/postbacks", method: .post,
                                                    body: try LiveServer.aak("U1", keyID: "apple-cas-identifier/5", key: try ECPrivateKey.generate()))
            #expect(response.status == .ok)
            #expect(response.json?["outcome"] == .string("unverifiable"))
            #expect(response.json?["reason"] == .string("unknown_kid"))
        }
        #expect(try await server.store().scalar("SELECT outcome || ':' || countable FROM postbacks", as: String.self) == "unverifiable:0")
    }

    @Test(arguments: TestEngine.allCases) func rejectionsGetSpecificErrorsAndKeepReceipts(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine, bodyLimit: 4096)
        try await server.run { client in
            let cases: [(String, ByteBuffer, HTTPResponse.Status, String)] = [
                (aakPath, try LiveServer.aak("I1", key: try ECPrivateKey.generate()), .badRequest, "bad_signature"),
                (aakPath, ByteBuffer(string: "{not json"), .badRequest, "malformed_json"),
                (aakPath, ByteBuffer(string: #"{"jws-string": ["a"]}"#), .badRequest, "wrong_type"),
                (skanPath, ByteBuffer(string: #"{"version":"4.0","ad-network-id":"a","source-identifier":"12","app-id":1,"transaction-id":7,"redownload":false,"fidelity-type":1,"did-win":true,"postback-sequence-index":0,"attribution-signature":"AA=="}"#), .badRequest, "wrong_type"),
                (aakPath, try LiveServer.aak("I2") { $0.conversionValue = 64 }, .badRequest, "field_out_of_range"),
                (skanPath, try LiveServer.aak("I3"), .badRequest, "wrong_protocol"),
                ("/postbacks", ByteBuffer(string: #"{"hello": "world"}"#), .badRequest, "unknown_format"),
                (aakPath, ByteBuffer(repeating: UInt8(ascii: " "), count: 5000), .contentTooLarge, "payload_too_large"),
            ]
            for (path, body, status, code) in cases {
                let response = try await client.execute(uri: path, method: .post, body: body)
                #expect(response.status == status, "\(code)")
                #expect(response.json?["error"] == .string(code))
                #expect(response.json?["message"]?.string != nil)
            }
        }
        #expect(try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 0)
        let reasons = try await server.column("SELECT reason FROM receipts ORDER BY id", as: String.self)
        #expect(reasons == ["bad_signature", "malformed_json", "wrong_type", "wrong_type", "field_out_of_range", "wrong_protocol", "unknown_format"])
    }

    @Test(arguments: TestEngine.allCases) func skanExamplesAtTheSKANRoute(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            for id in ["skan-4.0-web-high-tier", "skan-3.0-winning", "skan-2.2", "hist-skan-2.0-b"] {
                let response = try await client.execute(uri: skanPath, method: .post, body: ByteBuffer(bytes: try Checkout.appleExample(id)))
                #expect(response.status == .ok, "\(id)")
            }
        }
        // 3.0, 2.2 and 2.0 share a transaction id and window: one row, later copies differ so they are replays.
        let rows = try await server.rows("SELECT version, replays FROM postbacks ORDER BY id")
        #expect(try rows.map { try $0.get("version", as: String.self) } == ["4.0", "3.0"])
        #expect(try rows.map { try $0.get("replays", as: Int.self) } == [0, 2])
    }

    @Test func storageFailureAnswers500NotOK() async throws {
        let server = LiveServer(busyTimeout: 0.1)
        try await server.run { client in
            var holdsLock = Configuration()
            holdsLock.allowsUnsafeTransactions = true
            // The server's writer folds the report rollup when it starts, so this connection may have to wait its turn.
            holdsLock.busyMode = .timeout(5)
            let other = try DatabaseQueue(path: server.settings.database, configuration: holdsLock)
            try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
            let failed = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("S1"))
            #expect(failed.status == .internalServerError)
            #expect(failed.json?["error"] == .string("storage_unavailable"))
            try await other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
            let retried = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("S1"))
            #expect(retried.status == .ok)
            #expect(retried.json?["status"] == .string("stored"))
        }
    }

    @Test(arguments: TestEngine.allCases) func operationalRoutes(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.json?["status"] == .string("ready"))
            _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("M1"))
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            // The one postback, as this server's own registry counts it: one request stored, one verification, one batch.
            let lines = metrics.split(separator: "\n")
            let stored = lines.filter { $0.hasPrefix("countersign_postback_requests_total{") && $0.contains(#"status="200""#) }
            #expect(stored.count == 1 && stored.first?.hasSuffix(" 1") == true, "\(stored)")
            #expect(lines.filter { $0.hasPrefix("countersign_verify_seconds_count") } == ["countersign_verify_seconds_count 1"])
            #expect(lines.filter { $0.hasPrefix("countersign_commit_batch_size_count") } == ["countersign_commit_batch_size_count 1"])
        }
    }
}

/// docs/openapi.yaml and the running server agree on routes and query parameters.
@Suite struct OpenAPIAgreementTests {
    static func document() throws -> String {
        try String(contentsOf: Checkout.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
    }

    /// The values of the first `enum: [...]` on the line of the `by` parameter whose description starts with `marker`.
    static func dimensionEnum(_ marker: String) throws -> [String] {
        let line = try #require(try document().split(separator: "\n").first { $0.contains("name: by,") && $0.contains(marker) })
        let list = try #require(line.range(of: "enum: [").map { line[$0.upperBound...].prefix { $0 != "]" } })
        return list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test func theDocumentedDimensionsAreTheServersOwn() throws {
        #expect(try Self.dimensionEnum("Comma-separated dimensions (docs/metrics.md): day: The day the postback arrived") == ReportQuery.Dimension.allCases.map(\.rawValue))
        #expect(try Self.dimensionEnum("Comma-separated dimensions (docs/metrics.md): day: The day in the report") == PerformanceQuery.Dimension.allCases.map(\.rawValue))
        #expect(try Self.dimensionEnum("day (in tz), week, status") == IntakeQuery.Dimension.allCases.map(\.rawValue))
        #expect(try Self.dimensionEnum("day, app, source, org") == AttributionReportQuery.Dimension.allCases.map(\.rawValue))
    }

    /// Every time zone the document lists is accepted, and names it cannot list are refused.
    @Test func theDocumentedTimeZonesAreAccepted() throws {
        let text = try Self.document()
        let start = try #require(text.range(of: "    TimeZone:\n"))
        let block = text[start.upperBound...].prefix { _ in true }.split(separator: "\n").prefix { $0.hasPrefix("      ") }
        let zones = block.filter { $0.hasPrefix("        - ") }.map { String($0.dropFirst("        - ".count)) }
        #expect(zones.count > 400)
        #expect(zones.contains("UTC") && zones.contains("Europe/Berlin") && zones.contains("Asia/Kolkata"))
        for zone in zones { #expect(ReportTimeZone(identifier: zone) != nil, "\(zone)") }
        for name in ["CET", "+02:00", "europe/berlin", "Mars/Olympus", ""] {
            #expect(!zones.contains(name) && ReportTimeZone(identifier: name) == nil, "\(name)")
        }
    }

    /// Names of the reusable query parameters under `components: parameters:`, with a sample valid value each.
    static func documentedReportParameters() throws -> [String] {
        let text = try String(contentsOf: Checkout.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("    "), !line.hasPrefix("     "), let range = line.range(of: "{ name: ") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "," })
        }
    }

    @Test func reportParametersInTheDocumentAreTheOnesTheServerTakes() async throws {
        let documented = try Self.documentedReportParameters()
        let samples = ["by": "campaign", "from": "2026-11-01", "to": "2026-11-02", "app": "1", "ad_network": "x", "source_prefix": "12",
                       "type": "install", "window": "0", "did_win": "true", "interaction": "click", "country": "US",
                       "environment": "production", "tier": "2", "protocol": "aak", "currency": "EUR", "tz": "Europe/Berlin", "include_uncounted": "true", "format": "json", "last": "7d", "basis": "install"]
        #expect(Set(documented) == Set(samples.keys), "document: \(documented.sorted())")
        let server = LiveServer()
        let key = try await TestStore.open(StoreSettings(location: try DatabaseLocation(server.settings.database))).apiKeys.create(name: "doc").key
        try await server.run { client in
            for name in documented {
                let response = try await client.execute(uri: "/v1/reports?\(name)=\(samples[name] ?? "")", method: .get, headers: [.authorization: "Bearer \(key)"])
                #expect(response.status == .ok, "\(name)")
            }
            let undocumented = try await client.execute(uri: "/v1/reports?colour=blue", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(undocumented.status == .badRequest)
        }
    }

    /// (method, path) pairs documented under `paths:`, read from the YAML's two fixed indentation levels.
    static func documentedOperations() throws -> [(method: String, path: String)] {
        let text = try String(contentsOf: Checkout.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var operations: [(String, String)] = []
        var inPaths = false
        var currentPath: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, !line.hasPrefix(" "), !line.isEmpty { break }
            if line.hasPrefix("  /"), line.hasSuffix(":") { currentPath = String(line.dropFirst(2).dropLast()); continue }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let currentPath, line.hasPrefix("    "), !line.hasPrefix("     "), ["get:", "post:", "put:", "delete:"].contains(trimmed) {
                operations.append((String(trimmed.dropLast()).uppercased(), currentPath))
            }
        }
        return operations
    }

    @Test func everyDocumentedOperationIsServedAndEveryRouteIsDocumented() async throws {
        let operations = try Self.documentedOperations()
        let documentedPaths = Set(operations.map(\.path).map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        #expect(documentedPaths.contains("/v1/schemas/{app}"))
        #expect(Set(operations.filter { $0.path == "/v1/schemas/{app}" }.map(\.method)) == ["GET", "PUT"])
        for (path, _) in ServerApplication.postbackRoutes { #expect(documentedPaths.contains(path), "\(path) is not documented") }
        for path in ["/healthz", "/readyz", "/metrics"] { #expect(documentedPaths.contains(path)) }
        try await LiveServer().run { client in
            for operation in operations {
                // Path parameters get a sample value; a documented route must not answer 404 or 405.
                let uri = operation.path.replacingOccurrences(of: "{app}", with: "1108187390")
                    .replacingOccurrences(of: "{ad_network}", with: "example.adattributionkit")
                    .replacingOccurrences(of: "{level}", with: "campaign").replacingOccurrences(of: "{digits}", with: "12")
                    .replacingOccurrences(of: "{identifier}", with: "5b7a8f4e-0c1d-4e2f-9a3b-1c2d3e4f5a6b").replacingOccurrences(of: "{file}", with: "core.js").replacingOccurrences(of: "{name}", with: "acme-mmp").replacingOccurrences(of: "{digit}", with: "3")
                let response = try await client.execute(uri: uri, method: HTTPRequest.Method(operation.method)!,
                                                        body: operation.method == "POST" ? ByteBuffer(string: "{}") : nil)
                #expect(response.status != .notFound && response.status != .methodNotAllowed, "\(operation.method) \(operation.path)")
            }
            let undocumented = try await client.execute(uri: "/not-documented", method: .get)
            #expect(undocumented.status == .notFound)
        }
    }
}

/// Every postback route stores, deduplicates and detects replays the same way.
@Suite struct RouteMatrixTests {
    static let skanKey = LiveServer.networkKey

    static func body(_ family: String, id: String, country: String?) throws -> ByteBuffer {
        if family == "aak" { return try LiveServer.aak(id) { $0.countryCode = country } }
        var fields = SKANPostbackFields(transactionID: Mint.uuid(id).lowercased())
        fields.countryCode = country
        return ByteBuffer(bytes: try Mint.skan(fields, key: skanKey))
    }

    @Test(arguments: TestEngine.allCases, [(aakPath, "aak"), (skanPath, "skan"), ("/postbacks", "aak"), ("/postbacks", "skan")])
    func storedDuplicateReplay(engine: TestEngine, route: (path: String, family: String)) async throws {
        let (path, family) = route
        let server = LiveServer(engine: engine)
        try await server.run { client in
            let statuses = try await [nil, nil, "GB"].asyncMap { country in
                try await client.execute(uri: path, method: .post, body: try Self.body(family, id: "M-\(family)", country: country)).json?["status"]
            }
            #expect(statuses == [.string("stored"), .string("duplicate"), .string("replay")])
        }
        // One row, counted once; the copies move its counters.
        #expect(try await server.scalar("SELECT count(*) FROM postbacks WHERE countable = 1 AND duplicates = 1 AND replays = 1", as: Int.self) == 1)
        #expect(try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 1)
    }
}


/// The real binary: SIGTERM while postbacks are in flight drains them. Eight senders keep postbacks coming; once 40
/// are acknowledged the process gets SIGTERM and each sender goes on until it is told 503 or the server is gone. Every request sent is
/// answered 200 (stored), 503 (`shutting_down`, send it again) or not at all once the socket closed; the process exits 0;
/// and every postback answered 200 is in the database.
@Suite struct ServeProcessTests {
    /// What the senders saw.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var acknowledged: [String] = []
        private var others: [UInt] = []
        private var signalled = false

        /// Records an answer; returns true the first time `threshold` acknowledgements are reached.
        func record(_ id: String, status: UInt, threshold: Int) -> Bool {
            lock.withLock {
                if status == 200 { acknowledged.append(id) } else { others.append(status) }
                guard !signalled, acknowledged.count >= threshold else { return false }
                signalled = true
                return true
            }
        }

        var snapshot: (acknowledged: [String], others: [UInt]) { lock.withLock { (acknowledged, others) } }
    }

    @Test func sigtermDrainsWhatIsInFlightAndExitsCleanly() async throws {
        let directory = Checkout.temporaryDirectory()
        let keyFile = directory + "/network.pem"
        try LiveServer.networkKey.publicKey.pem.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Checkout.binary)
        process.arguments = ["serve", "--port", "0", "--database", directory + "/db.sqlite", "--keys-dir", Checkout.keys, "--log-level", "error",
                             "--key", "network/0=" + keyFile]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = ""
        while !line.contains("\n"), let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty {
            line += String(decoding: byte, as: UTF8.self)
        }
        let url = try #require(line.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let answers = Answers()
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<8 {
                group.addTask {
                    // At most 2,000 each: a server that never reached the threshold fails the test rather than hanging it.
                    for index in 0..<2_000 {
                        let id = "T\(sender)-\(index)"
                        var request = HTTPClientRequest(url: url + "/.well-known/appattribution/report-attribution/")
                        request.method = .POST
                        guard let body = try? LiveServer.aak(id) else { return }
                        request.body = .bytes(body)
                        // Once the server is gone, a sender stops.
                        guard let response = try? await client.execute(request, timeout: .seconds(30)) else { return }
                        _ = try? await response.body.collect(upTo: 1 << 16)
                        if answers.record(id, status: response.status.code, threshold: 40) { process.terminate() }
                        // Told the server is shutting down, a device sends again later: this sender stops (and on any
                        // other refusal, which the expectations below report).
                        if response.status != .ok { return }
                    }
                }
            }
        }
        try await client.shutdown()
        process.waitUntilExit(within: 60, "countersign serve after SIGTERM")
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let (acknowledged, others) = answers.snapshot
        #expect(acknowledged.count >= 40)
        #expect(others.allSatisfy { $0 == 503 }, "answers other than 200 and 503: \(others)")
        let stored = try await DatabaseQueue(path: directory + "/db.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT postback_identifier FROM postbacks")
        }
        #expect(Set(stored).isSuperset(of: acknowledged.map { Mint.uuid($0) }), "every acknowledged postback is stored")
    }
}

/// Every error code the server can answer is listed in docs/openapi.yaml.
@Suite struct ErrorCodeDocumentationTests {
    @Test func everyErrorCodeIsDocumented() throws {
        let text = try String(contentsOf: Checkout.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        for code in APIErrorCode.allCases { #expect(text.contains(code.rawValue), "\(code.rawValue) is not in docs/openapi.yaml") }
    }
}

/// A request no route takes gets a JSON error that says what to do: 405 with `Allow`, or 404 (issue 15, item 6).
@Suite struct UnmatchedRouteTests {
    @Test func wrongMethodsAndUnknownPathsAnswerJSON() async throws {
        try await LiveServer().run { client in
            let wrongMethod = try await client.execute(uri: "/postbacks", method: .get)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow] == "POST")
            #expect(wrongMethod.json?["error"]?.string == "method_not_allowed")
            let withParameter = try await client.execute(uri: "/v1/schemas/123", method: .post, body: ByteBuffer(string: "{}"))
            #expect(withParameter.status == .methodNotAllowed)
            #expect(withParameter.headers[.allow] == "GET, PUT")
            let unknown = try await client.execute(uri: "/v2/reports", method: .get)
            #expect(unknown.status == .notFound)
            #expect(unknown.json?["error"]?.string == "not_found")
            #expect(unknown.json?["message"]?.string?.contains("docs/openapi.yaml") == true)
            // A matched route still answers for itself (here: no API key).
            let schema = try await client.execute(uri: "/v1/schemas/123", method: .get)
            #expect(schema.status == .unauthorized)
        }
    }
}
