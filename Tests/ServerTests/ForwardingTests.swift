import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import HummingbirdTesting
import Testing
import JWS
import PostbackMint
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// Forwarding against real partners on loopback with faults (issue 15, item 1): every verified postback arrives at least
/// once, byte for byte, repeats carry the same idempotency key, a partner that fails delays nobody else, limits hold,
/// dead letters are listed and retried, and a receiver killed mid-delivery loses nothing.
@Suite struct ForwardingTests {
    static func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    /// The status table as rows keyed by partner, then column.
    static func status(_ store: StoreDatabase) async throws -> [String: [String: JSONValue]] {
        let table = try await store.forwarding.status()
        var rows: [String: [String: JSONValue]] = [:]
        for row in table.rows {
            guard case .string(let partner) = row[0] else { continue }
            rows[partner] = Dictionary(uniqueKeysWithValues: zip(table.columns, row))
        }
        return rows
    }

    @Test(arguments: TestEngine.allCases) func partnersWithFaultsGetEveryVerifiedPostbackAndNobodyWaitsForAnother(engine: TestEngine) async throws {
        let partners = PartnerStandIn([
            "healthy": .accept, "flaky": .failFirst(3, status: 500), "hold": .holdFirst(3), "slow": .slow(0.2), "down": .down, "paced": .accept,
        ])
        let refused = try PartnerStandIn.refusingURL()
        let count = 12
        var configured = LiveServer(engine: engine)
        configured.settings.forwardSchedule = ForwardingSchedule(initialBackoff: 0.05, maximumBackoff: 0.2)
        let server = configured
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "ops", scopes: [.admin]).key
        let reader = try await store.apiKeys.create(name: "reader", scopes: [.read]).key
        // The genuine postbacks, each sent twice and once replayed; forgeries under a kid nobody knows; junk.
        let genuine = try (0..<count).map { try LiveServer.aak("F-\($0)") }
        let keys = Set((0..<count).map { "aak:" + Mint.uuid("F-\($0)") })
        let stranger = try ECPrivateKey.generate()
        try await partners.serve { base in
            try await server.run { client in
                let rules: [(String, String)] = [
                    ("healthy", #"{"url": "\#(base)/healthy"}"#),
                    ("flaky-\(engine)", #"{"url": "\#(base)/flaky"}"#),
                    ("hold", #"{"url": "\#(base)/hold", "timeout": 0.5}"#),
                    ("slow", #"{"url": "\#(base)/slow", "concurrency": 2}"#),
                    ("refused", #"{"url": "\#(refused)", "max_age": 1, "timeout": 0.5}"#),
                    ("down", #"{"url": "\#(base)/down", "max_age": 1.5}"#),
                    ("paced", #"{"url": "\#(base)/paced", "rate": 4}"#),
                    ("other-network", #"{"url": "\#(base)/healthy", "ad_network": "other.adattributionkit"}"#),
                ]
                for (name, body) in rules {
                    let response = try await client.execute(uri: "/v1/forwarding/rules/\(name)", method: .put, headers: Self.bearer(admin),
                                                            body: ByteBuffer(string: body))
                    #expect(response.status == .ok, "\(name): \(String(buffer: response.body))")
                }
                // Forwarding is the admin's: a read key is refused.
                #expect(try await client.execute(uri: "/v1/forwarding/status", method: .get, headers: Self.bearer(reader)).status == .forbidden)
                let bad = try await client.execute(uri: "/v1/forwarding/rules/x", method: .put, headers: Self.bearer(admin),
                                                   body: ByteBuffer(string: #"{"url": "ftp://x.example/"}"#))
                #expect(bad.status == .badRequest)
                #expect(bad.json?["error"] == .string("bad_parameter"))

                for body in genuine {
                    #expect(try await client.execute(uri: aakPath, method: .post, body: body).status == .ok)
                    #expect(try await client.execute(uri: aakPath, method: .post, body: body).status == .ok)
                }
                _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("F-0") { $0.countryCode = "GB" })
                for index in 0..<3 {
                    _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("F-forged-\(index)", keyID: "unknown/0", key: stranger))
                }
                _ = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(string: "{}"))

                // Settles: everything delivered except the refused and down partners' entries, which die.
                let settled = try await eventually(within: 60) {
                    let rows = try await Self.status(store)
                    return rows.values.allSatisfy { $0["pending"] == .number("0") } && rows["refused"]?["dead"] == .number(String(count))
                        && rows["down"]?["dead"] == .number(String(count))
                }
                let seen = try await Self.status(store)
                #expect(settled, "\(seen)")

                // Every verified postback reached every working partner, as the bytes the device sent, with its dedup key.
                let sentBodies = Dictionary(uniqueKeysWithValues: zip((0..<count).map { "aak:" + Mint.uuid("F-\($0)") }, genuine.map { Array(buffer: $0) }))
                for path in ["healthy", "flaky", "hold", "slow", "paced"] {
                    #expect(partners.accepted(path) == keys, "\(path)")
                    for arrival in partners.arrivals(path) {
                        #expect(arrival.body == sentBodies[arrival.idempotencyKey], "\(path): the original body, byte for byte")
                        #expect(arrival.contentType == "application/json")
                    }
                }
                // A healthy partner gets each exactly once; the flaky one four times (three 500s), attempts numbered.
                #expect(partners.arrivals("healthy").count == count, "a rule for another network forwards nothing")
                for key in keys {
                    #expect(partners.arrivals("flaky").filter { $0.idempotencyKey == key }.map(\.attempt) == [1, 2, 3, 4])
                    #expect(partners.arrivals("hold").filter { $0.idempotencyKey == key }.count >= 2)
                }
                // Limits: two in flight at most to the slow partner; four a second to the paced one (a burst of four,
                // then one every 250 ms: the twelfth at least two seconds after the first).
                #expect(partners.mostInFlight("slow") <= 2)
                #expect(partners.mostInFlight("slow") >= 1)
                let paced = partners.arrivals("paced").map(\.at)
                #expect(try #require(paced.max()).timeIntervalSince(try #require(paced.min())) >= 1.5)
                // Nobody waited for the partners that failed: the healthy partner had everything before the holding partner
                // had even made its first attempts (twelve 0.5 s timeouts, four at a time).
                let healthyDone = try #require(partners.arrivals("healthy").map(\.at).max())
                let holdFirstAttempts = try #require(partners.arrivals("hold").filter { $0.attempt == 1 }.map(\.at).max())
                #expect(healthyDone < holdFirstAttempts.addingTimeInterval(0.5))

                // The dead letters are listed, with why.
                let dead = try await client.execute(uri: "/v1/forwarding/entries?state=dead&partner=refused&format=json", method: .get, headers: Self.bearer(admin))
                #expect(dead.status == .ok)
                guard case .array(let deadRows)? = dead.json?["rows"] else { Issue.record("no rows: \(String(buffer: dead.body))"); return }
                #expect(deadRows.count == count)
                #expect(deadRows.allSatisfy { $0.object?["last_answer"] == .string("refused") })
                #expect(Set(deadRows.compactMap { $0.object?["dedup_key"]?.string }) == keys)

                // The partner that was down comes back; an operator retries its dead letters and they arrive.
                partners.bringUp("down")
                let retried = try await client.execute(uri: "/v1/forwarding/retry", method: .post, headers: Self.bearer(admin),
                                                       body: ByteBuffer(string: #"{"partner": "down"}"#))
                #expect(retried.json?["retried"] == .number(String(count)))
                let unknown = try await client.execute(uri: "/v1/forwarding/retry", method: .post, headers: Self.bearer(admin),
                                                       body: ByteBuffer(string: #"{"partner": "nobody"}"#))
                #expect(unknown.status == .notFound)
                #expect(unknown.json?["error"] == .string("forward_rule_not_found"))
                #expect(await eventually(within: 30) { partners.accepted("down") == keys })
                #expect(try await eventually(within: 10) { try await Self.status(store)["down"]?["delivered"] == .number(String(count)) })
                let rows = try await Self.status(store)
                #expect(rows["down"]?["dead"] == .number("0"))
                #expect(rows["healthy"]?["delivered"] == .number(String(count)))
                #expect(rows["refused"]?["last_answer"] == .string("refused"))

                // Metrics per partner.
                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                // The server's own registry: each figure is this server's alone.
                func sample(_ name: String, _ labels: String...) -> String? {
                    metrics.split(separator: "\n").first { line in line.hasPrefix("\(name){") && labels.allSatisfy { line.contains($0) } }
                        .map { String($0.split(separator: " ").last!) }
                }
                #expect(sample("countersign_forward_attempts_total", #"partner="flaky-\#(engine)""#, #"answer="500""#) == "\(3 * count)")
                #expect(sample("countersign_forward_delivered_total", #"partner="healthy""#) == "\(count)")
                #expect(sample("countersign_forward_delivered_total", #"partner="down""#) == "\(count)")
                #expect(sample("countersign_forward_dead_total", #"partner="refused""#) == "\(count)")
                #expect(sample("countersign_forward_dead_total", #"partner="healthy""#) == nil)
            }
        }
        if engine == .sqlite {
            // The same, from the command line.
            let status = try await countersign(["forward", "status", "--format", "csv", "--database", server.settings.database])
            #expect(status.status == 0)
            #expect(status.stdout.contains("refused,\(refused),0,0,\(count),0"))
            let list = try await countersign(["forward", "list", "--partner", "refused", "--format", "csv", "--database", server.settings.database])
            #expect(list.stdout.split(whereSeparator: \.isNewline).count == count + 1)
            let retry = try await countersign(["forward", "retry", "--partner", "refused", "--database", server.settings.database])
            #expect(retry.stdout.hasPrefix("\(count) dead letters queued again"))
            #expect(try await countersign(["forward", "retry", "--partner", "nobody", "--database", server.settings.database]).status == 1)
            #expect(try await countersign(["forward", "set", "x", "--url", "https://x.example/", "--rate", "0", "--database", server.settings.database]).stderr
                .contains("--rate: must be"))
        }
    }

    @Test func aReceiverKilledMidDeliveryDeliversAgainWithTheSameKey() async throws {
        let partners = PartnerStandIn(["held": .slow(0.6)])
        let work = Checkout.temporaryDirectory()
        let database = work + "/forward.sqlite"
        _ = try await countersign(["keys", "generate", "--out", work + "/key"])
        let key = try ECPrivateKey(pem: String(contentsOfFile: work + "/key/private-key.pem", encoding: .utf8))
        let arguments = ["--key", "network/0=\(work)/key/public-key.pem", "--forward-backoff", "0.05", "--forward-max-backoff", "0.2"]
        let count = 40
        let bodies = try (0..<count).map { try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid("K-\($0)")), key: key, keyID: "network/0") }
        let keys = Set((0..<count).map { "aak:" + Mint.uuid("K-\($0)") })
        try await partners.serve { base in
            let first = try ReceiverProcess(database: database, extraArguments: arguments)
            #expect(try await countersign(["forward", "set", "held", "--url", base + "/held", "--timeout", "2", "--concurrency", "4", "--database", database]).status == 0)
            let client = HTTPClient.shared
            for body in bodies {
                var request = HTTPClientRequest(url: first.url + aakPath)
                request.method = .POST
                request.body = .bytes(ByteBuffer(bytes: body))
                #expect(try await client.execute(request, timeout: .seconds(10)).status == .ok)
            }
            // Killed while deliveries are in flight: the partner has them, Countersign never heard back.
            #expect(await eventually(within: 30) { partners.inFlight("held") >= 2 && partners.arrivals("held").count >= 8 })
            let inFlightAtKill = partners.inFlight("held")
            first.stop(SIGKILL)
            let second = try ReceiverProcess(database: database, extraArguments: arguments)
            defer { second.stop() }
            let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
            let settled = try await eventually(within: 60) {
                let rows = try await Self.status(store)
                return rows["held"]?["pending"] == .number("0") && rows["held"]?["delivered"] == .number(String(count))
            }
            let seen = try await Self.status(store)
            #expect(settled, "\(seen)")
            #expect(partners.accepted("held") == keys, "every acknowledged postback reached the partner")
            let repeated = Dictionary(grouping: partners.arrivals("held"), by: \.idempotencyKey).filter { $0.value.count > 1 }
            #expect(repeated.count >= inFlightAtKill, "what was in flight at the kill is delivered again")
            for (key, arrivals) in repeated {
                #expect(Set(arrivals.map(\.body)).count == 1, "\(key): every repeat is the same body under the same key")
            }
            #expect(try await Self.status(store)["held"]?["dead"] == .number("0"))
        }
    }
}

/// A failed delivery is classified by the error's type, never by its text (issue 29, item 6: the forwarder looked for
/// the substring "refused").
@Suite struct ForwardFailureTests {
    struct Described: Error, CustomStringConvertible {
        var description: String
    }

    @Test func failuresAreClassifiedByType() {
        #expect(Forwarder.describe(IOError(errnoCode: ECONNREFUSED, reason: "connect")).answer == "refused")
        #expect(Forwarder.describe(HTTPClientError.deadlineExceeded).answer == "timeout")
        #expect(Forwarder.describe(HTTPClientError.connectTimeout).answer == "timeout")
        #expect(Forwarder.describe(IOError(errnoCode: ECONNRESET, reason: "read")).answer == "network")
        // A message that mentions refusal is not a refused connection.
        #expect(Forwarder.describe(Described(description: "the partner refused the body")).answer == "network")
    }
}
