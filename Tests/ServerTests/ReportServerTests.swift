import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import PostbackMint
import Store
import TestSupport
@testable import PostbackServer

/// `/v1/reports` and `/v1/conversions` over a live server, and `countersign report` on the same file.
@Suite struct ReportServerTests {
    @Test(arguments: TestEngine.allCases) func reportsInEveryFormatAgreeWithTheCLI(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await server.store().apiKeys.create(name: "analyst").key
        let auth: HTTPFields = [.authorization: "Bearer \(key)"]
        var simulation = Simulation(seed: 5, key: LiveServer.networkKey, keyID: "network/0")
        let bodies = try (0..<150).map { _ in try simulation.next().body }
        try await server.run { client in
            for body in bodies {
                let response = try await client.execute(uri: "/postbacks", method: .post, body: ByteBuffer(bytes: body))
                #expect(response.status == .ok)
            }
            let json = try await client.execute(uri: "/v1/reports?by=campaign,window&from=2026-01-01", method: .get, headers: auth)
            #expect(json.status == .ok)
            guard case .array(let rows) = json.json?["rows"] else { Issue.record("no rows"); return }
            #expect(!rows.isEmpty)
            // The CLI on the same file gives the same numbers.
            let cli = try countersign(["report", "--database", server.settings.database, "--by", "campaign,window", "--from", "2026-01-01", "--format", "json"])
            #expect(cli.status == 0, "\(cli.stderr)")
            #expect(try JSONParser.parse(Array(cli.stdout.utf8)).object?["rows"] == .array(rows))

            let csv = try await client.execute(uri: "/v1/reports?by=campaign,window&from=2026-01-01", method: .get,
                                               headers: [.authorization: "Bearer \(key)", .accept: "text/csv"])
            #expect(csv.headers[.contentType]?.hasPrefix("text/csv") == true)
            let lines = String(buffer: csv.body).split(separator: "\r\n")
            #expect(lines.first?.hasPrefix("campaign,window,currency,postbacks,unique_conversions") == true)
            #expect(lines.count == rows.count + 1)

            let ndjson = try await client.execute(uri: "/v1/reports?by=day&format=ndjson", method: .get, headers: auth)
            #expect(ndjson.headers[.contentType] == "application/x-ndjson")
            #expect(ndjson.headers[.init("Countersign-Time-Zone")!] == "UTC")
            // Every answer states the zone of its days.
            let local = try await client.execute(uri: "/v1/reports?by=day&tz=America/New_York", method: .get, headers: auth)
            #expect(local.json?["time_zone"] == .string("America/New_York"))
            #expect(local.headers[.init("Countersign-Time-Zone")!] == "America/New_York")
            let badZone = try await client.execute(uri: "/v1/reports?by=day&tz=EST", method: .get, headers: auth)
            #expect(badZone.json?["message"] == .string("tz: must be an IANA time zone name such as UTC, Europe/Berlin or America/New_York"))
            #expect(String(buffer: ndjson.body).split(separator: "\n").allSatisfy { (try? JSONParser.parse(Array($0.utf8)).object) != nil })

            let bad = try await client.execute(uri: "/v1/reports?by=campaign;drop", method: .get, headers: auth)
            #expect(bad.status == .badRequest)
            #expect(bad.json?["error"] == .string("bad_parameter"))
            #expect(bad.json?["message"]?.string?.hasPrefix("by: unknown dimension") == true)
            let noKey = try await client.execute(uri: "/v1/reports", method: .get)
            #expect(noKey.status == .unauthorized)

            var after = "0"
            var total = 0
            while true {
                let page = try await client.execute(uri: "/v1/conversions?limit=40&after=\(after)", method: .get, headers: auth)
                guard case .array(let conversions) = page.json?["rows"] else { Issue.record("no conversions"); return }
                total += conversions.count
                guard let next = page.headers[.init("Next-After")!] else { break }
                after = next
            }
            let counted = try await server.store().scalar("SELECT count(*) FROM postbacks WHERE countable = 1", as: Int.self)
            #expect(total == counted)
        }
        let table = try countersign(["report", "--database", server.settings.database, "--by", "protocol,day", "--tz", "Europe/Berlin"])
        #expect(table.stdout.hasPrefix("protocol"))
        #expect(table.stdout.hasSuffix("(days and weeks in Europe/Berlin)\n"))
        #expect(try countersign(["report", "--database", server.settings.database, "--by", "nonsense"]).status == 2)
    }
}

/// The CSV export path writes the same rows as the JSON one.
@Suite struct ConversionExportTests {
    @Test(arguments: TestEngine.allCases) func csvAndJSONPagesAgree(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await server.store().apiKeys.create(name: "export").key
        var simulation = Simulation(seed: 8, key: LiveServer.networkKey, keyID: "network/0")
        let bodies = try (0..<60).map { _ in try simulation.next().body }
        try await server.run { client in
            for body in bodies { _ = try await client.execute(uri: "/postbacks", method: .post, body: ByteBuffer(bytes: body)) }
            let json = try await client.execute(uri: "/v1/conversions?limit=25", method: .get, headers: [.authorization: "Bearer \(key)"])
            let csv = try await client.execute(uri: "/v1/conversions?limit=25&format=csv", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(json.headers[.init("Next-After")!] == csv.headers[.init("Next-After")!])
            guard case .array(let rows) = json.json?["rows"] else { Issue.record("no rows"); return }
            let lines = String(buffer: csv.body).split(separator: "\r\n", omittingEmptySubsequences: false).dropLast()
            #expect(lines.count == rows.count + 1)
            let header = lines.first!.split(separator: ",").map(String.init)
            for (row, line) in zip(rows, lines.dropFirst()) {
                let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                let object = try #require(row.object)
                for (column, field) in zip(header, fields) {
                    let value = object[column] ?? .null
                    let expected: String = switch value {
                    case .null: ""
                    case .string(let text): text
                    default: value.serialized
                    }
                    #expect(field == expected, "\(column)")
                }
            }
        }
    }
}
