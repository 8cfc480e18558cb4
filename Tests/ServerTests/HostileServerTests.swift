import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import JWS
import PostbackMint
@testable import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// The server as an attacker meets it (issue 11): stalled uploads, floods of client-reported records and tokens,
/// formula cells, forged log lines, a failing disk.
@Suite struct HostileServerTests {
    static let aakPath = "/.well-known/appattribution/report-attribution/"

    @Test func stalledUploadsAreClosedAndHealthzKeepsAnswering() async throws {
        var server = LiveServer()
        server.settings.requestTimeout = 1
        server.settings.idleTimeout = 2
        try await server.run(.live) { client in
            let port = try #require(client.port)
            // 200 connections that send headers and then a byte now and then: each is closed by the deadline.
            let stalled = try (0..<200).map { _ in try RawConnection(port: port, readTimeout: 5) }
            for connection in stalled {
                connection.send("POST \(Self.aakPath) HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            }
            for _ in 0..<3 {
                #expect(try await Self.healthz(port))
                for connection in stalled { connection.send(" ") }
                try await Task.sleep(for: .milliseconds(300))
            }
            let started = ContinuousClock.now
            var closed: [Bool] = []
            for connection in stalled { closed.append(await connection.readUntilClosed().closed) }
            #expect(closed.allSatisfy { $0 })
            #expect(ContinuousClock.now - started < .seconds(5))
            // Headers that never finish are closed by the idle timeout.
            let slowHeaders = try RawConnection(port: port, readTimeout: 5)
            slowHeaders.send("POST \(Self.aakPath) HTTP/1.1\r\nHost: x\r\n")
            #expect(await slowHeaders.readUntilClosed().closed)
            #expect(try await Self.healthz(port))
        }
    }

    /// `GET /healthz` on a connection of its own (the test client's keep-alive connection is closed by the short
    /// idle timeout these tests set).
    static func healthz(_ port: Int) async throws -> Bool {
        let connection = try RawConnection(port: port, readTimeout: 5)
        connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return await connection.readUntilClosed().text.hasPrefix("HTTP/1.1 200")
    }

    @Test func aDeclaredLengthOverTheLimitIsRefusedBeforeItIsRead() async throws {
        let server = LiveServer()
        try await server.run(.live) { client in
            let connection = try RawConnection(port: try #require(client.port), readTimeout: 5)
            connection.send("POST \(Self.aakPath) HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
            let (answer, closed) = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 413"))
            let body = try #require(answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) })
            #expect(try JSONParser.parse(Array(body.utf8)).object?["error"] == .string("payload_too_large"), "\(answer)")
            #expect(closed)
        }
    }

    @Test(arguments: TestEngine.allCases) func readinessFollowsTheWriter(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            try await server.write { db in try RefusingTrigger.install(on: "receipts", message: "disk full", db) }
            let failed = try await client.execute(uri: Self.aakPath, method: .post, body: try LiveServer.aak("RZ1"))
            #expect(failed.status == .internalServerError)
            let notReady = try await client.execute(uri: "/readyz", method: .get)
            #expect(notReady.status == .serviceUnavailable)
            #expect(notReady.json?["error"] == .string("storage_failing"))
            try await server.write { db in try RefusingTrigger.remove(from: "receipts", db) }
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
            #expect(try await client.execute(uri: Self.aakPath, method: .post, body: try LiveServer.aak("RZ1")).status == .ok)
        }
    }

    @Test(arguments: TestEngine.allCases) func unverifiableCopiesOfACountedPostbackAreAnsweredAsSuch(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            #expect(try await client.execute(uri: Self.aakPath, method: .post, body: try LiveServer.aak("UC1")).json?["status"] == .string("stored"))
            let forged = try LiveServer.aak("UC1", { $0.conversionValue = 63 }, keyID: "apple-cas-identifier/9", key: try ECPrivateKey.generate())
            let answer = try await client.execute(uri: Self.aakPath, method: .post, body: forged)
            #expect(answer.status == .ok)
            #expect(answer.json?["status"] == .string("unverified_copy"))
        }
        let row = try #require(try await server.rows("SELECT replays, unverified_copies FROM postbacks").first)
        #expect(try row.get("replays", as: Int.self) == 0)
        #expect(try row.get("unverified_copies", as: Int.self) == 1)
    }

    @Test(arguments: TestEngine.allCases) func iAdSubmissionsAreClientReportedAndKeptOnce(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.publicBurst = 100
        let store = try server.store()
        defer { store.close() }
        let key = try await store.apiKeys.create(name: "ads").key
        let auth: HTTPFields = [.authorization: "Bearer \(key)"]
        try await server.run { client in
            var statuses: [JSONValue?] = []
            for _ in 0..<50 {
                let answer = try await client.execute(uri: "/v1/iad/attribution?app=1108187390", method: .post, body: ByteBuffer(string: AppleAdsServerTests.example))
                #expect(answer.status == .ok)
                statuses.append(answer.json?["status"])
            }
            #expect(statuses.first == .string("stored"))
            #expect(statuses.dropFirst().allSatisfy { $0 == .string("duplicate") })
            // The same install id with another dictionary is the same install.
            let other = AppleAdsServerTests.example.replacingOccurrences(of: "keyword name", with: "other")
                .replacingOccurrences(of: "2020-08-04T17:17:00Z", with: "2020-08-04T17:16:00Z")
            for body in [AppleAdsServerTests.example, other] {
                _ = try await client.execute(uri: "/v1/iad/attribution?app=1108187390&install_id=i-1", method: .post, body: ByteBuffer(string: body))
            }
            let records = try await client.execute(uri: "/v1/adservices/records", method: .get, headers: auth)
            guard case .array(let rows) = records.json?["rows"] else { Issue.record("no rows"); return }
            #expect(rows.count == 2)
            #expect(rows.allSatisfy { $0.object?["reported_by"] == .string("client") })
            // Reports count Apple's records unless asked for the app-reported ones.
            func attributed(_ query: String) async throws -> JSONValue? {
                let report = try await client.execute(uri: "/v1/adservices/report\(query)", method: .get, headers: auth)
                guard case .array(let rows) = report.json?["rows"] else { return nil }
                return rows.first?.object?["attributed"]
            }
            #expect(try await attributed("") == .number("0"))
            #expect(try await attributed("?include_client_reported=true") == .number("2"))
            #expect(try await attributed("?source=iad") == .number("2"))
        }
    }

    @Test(arguments: TestEngine.allCases) func theTokenQueueIsBoundedAndDatedTokensCannotOutliveTheirDay(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.adServicesMaximumQueue = 3
        server.settings.publicRate = 1
        server.settings.publicBurst = 5
        server.settings.adServicesURL = "http://127.0.0.1:9/"
        try await server.run { client in
            func post(_ body: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/adservices/tokens", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
            }
            let future = Date().addingTimeInterval(365 * 86400).formatted(.iso8601)
            let dated = try await post(#"{"token": "ZnV0dXJl", "token-created-at": "\#(future)"}"#)
            #expect(dated.status == .badRequest)
            #expect(dated.json?["message"]?.string?.contains("future") == true)
            let soon = Date().addingTimeInterval(60).formatted(.iso8601)
            #expect(try await post(#"{"token": "c2tldw", "token-created-at": "\#(soon)"}"#).status == .accepted)
            #expect(try await post(#"{"token": "dHdv"}"#).status == .accepted)
            #expect(try await post(#"{"token": "dGhyZWU"}"#).status == .accepted)
            let full = try await post(#"{"token": "Zm91cg"}"#)
            #expect(full.status == .serviceUnavailable)
            #expect(full.json?["error"] == .string("queue_full"))
            #expect(full.headers[.retryAfter] == "60")
            // The burst of 5 is spent: the next request from this address waits.
            let limited = try await post(#"{"token": "Zml2ZQ"}"#)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.json?["error"] == .string("rate_limited"))
            #expect(limited.headers[.retryAfter] != nil)
        }
        // A token dated a minute ahead lives from when Countersign saw it, not from its claimed time.
        let createdAt = try #require(try await server.scalar("SELECT token_created_at FROM adservices_jobs WHERE app IS NULL ORDER BY id LIMIT 1", as: Double.self))
        #expect(createdAt <= Date().timeIntervalSince1970)
    }

    @Test func textCellsCannotRunAsFormulas() {
        #expect(csvCell("=HYPERLINK(\"http://x\")") == "\"'=HYPERLINK(\"\"http://x\"\")\"")
        for start in ["=", "+", "-", "@", "\t", "\r"] {
            #expect(csvCell(start + "cmd").hasPrefix("\"'"), "\(start.debugDescription)")
        }
        #expect(csvCell("plain") == "plain")
        #expect(csvCell("a,b") == "\"a,b\"")
        let table = ReportTable(columns: ["name", "count"], rows: [[.string("=1+1"), .number("-3")]])
        #expect(ReportFormat.csv.render(table) == "name,count\r\n\"'=1+1\",-3\r\n")
    }

    @Test(arguments: TestEngine.allCases) func iAdNamesAreNeutralisedInCSVExports(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        server.settings.publicBurst = 100
        let key = try await TestStore.open(StoreSettings(location: try DatabaseLocation(server.settings.database))).apiKeys.create(name: "ads").key
        try await server.run { client in
            let body = AppleAdsServerTests.example.replacingOccurrences(of: "\"campaign name\"", with: "\"=cmd|' /C calc'!A0\"")
            #expect(try await client.execute(uri: "/v1/iad/attribution", method: .post, body: ByteBuffer(string: body)).status == .ok)
            let csv = try await client.execute(uri: "/v1/adservices/records?format=csv", method: .get, headers: [.authorization: "Bearer \(key)"])
            let text = String(buffer: csv.body)
            #expect(text.contains("\"'=cmd|' /C calc'!A0\""))
            #expect(!text.contains(",=cmd"))
        }
    }

    @Test func logLinesCannotBeForged() {
        #expect(ControlCharacters.escaped("a\nINFO forged") == "a\\nINFO forged")
        #expect(ControlCharacters.escaped("\u{1b}[31mred") == "\\u{1b}[31mred")
        let recorder = RecordingLogHandler()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(inner: recorder) }
        logger.logLevel = .info
        logger.info("stored\nfake line", metadata: ["dedup_key": "x\r\ny"])
        #expect(recorder.lines == ["stored\\nfake line dedup_key=x\\r\\ny"])
    }
}

/// A CSV cell as ``CSVField`` writes it.
private func csvCell(_ text: String) -> String {
    var bytes: [UInt8] = []
    CSVField.write(text, into: &bytes)
    return String(decoding: bytes, as: UTF8.self)
}
