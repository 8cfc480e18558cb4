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

                // Metrics per partner. A delivery's counter moves just after the store records it, so the last of the
                // retried deliveries can be in the status table a moment before it is in the counter.
                var metrics = ""
                func sample(_ name: String, _ labels: String...) -> String? {
                    metrics.split(separator: "\n").first { line in line.hasPrefix("\(name){") && labels.allSatisfy { line.contains($0) } }
                        .map { String($0.split(separator: " ").last!) }
                }
                // The server's own registry: each figure is this server's alone.
                _ = try await eventually(within: 10) {
                    metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                    return sample("countersign_forward_delivered_total", #"partner="down""#) == "\(count)"
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

    /// Templates, partner headers and test deliveries over the API (issue 48): a rule names a template that exists and
    /// shows its header's name, never its value; a network's own template is added, shown, guarded and removed; a test
    /// delivery reaches the partner marked, and the answer shows the secret as (secret).
    @Test func templatesHeadersAndTestDeliveriesOverTheAPI() async throws {
        let partners = PartnerStandIn(["intake": .accept, "refusing": .failFirst(100, status: 401), "echo": .echo])
        let server = LiveServer(engine: .sqlite)
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "ops", scopes: [.admin]).key
        let secret = "tok-\(UUID().uuidString)"
        try await partners.serve { base in
            try await server.run { client in
                func call(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> (HTTPResponse.Status, JSONObject?) {
                    let response = try await client.execute(uri: uri, method: method, headers: Self.bearer(admin), body: body.map { ByteBuffer(string: $0) })
                    #expect(!String(buffer: response.body).contains(secret), "\(method) \(uri) never answers with the secret")
                    return (response.status, response.json)
                }
                let rule = #"{"url": "\#(base)/intake", "template": "appmetrica", "header": {"name": "Authorization", "value": "\#(secret)"}}"#
                let (setStatus, set) = try await call(.put, "/v1/forwarding/rules/metrica", rule)
                #expect(setStatus == .ok && set?["template"] == .string("appmetrica") && set?["header"] == .string("Authorization"))
                let (_, unknown) = try await call(.put, "/v1/forwarding/rules/x", #"{"url": "\#(base)/intake", "template": "nope"}"#)
                #expect(unknown?["error"] == .string("bad_parameter") && unknown?["message"]?.string?.contains("nope") == true)
                let (badStatus, bad) = try await call(.put, "/v1/forwarding/rules/x", #"{"url": "\#(base)/intake", "header": {"name": "Content-Type", "value": "\#(secret)"}}"#)
                #expect(badStatus == .badRequest && bad?["error"] == .string("bad_parameter"))
                // Nothing stored yet: a test has nothing to send.
                let (emptyStatus, empty) = try await call(.post, "/v1/forwarding/rules/metrica/test")
                #expect(emptyStatus == .conflict && empty?["error"] == .string("forward_test_no_postback"))
                #expect(try await call(.post, "/v1/forwarding/rules/absent/test").0 == .notFound)

                #expect(try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("T-1")).status == .ok)
                let (testStatus, test) = try await call(.post, "/v1/forwarding/rules/metrica/test")
                #expect(testStatus == .ok && test?["accepted"] == .bool(true) && test?["status"] == .number("200"))
                #expect(test?["headers"]?.object?["Authorization"] == .string("(secret)"))
                let arrival = try #require(partners.arrivals("intake").last)
                #expect(arrival.headers["authorization"] == secret && arrival.headers["countersign-test"] == "true")
                let sent = try #require(try JSONParser.parse(arrival.body).object)
                #expect(sent["countersign-test"] == .bool(true) && sent["timestamp"]?.string != nil && sent["jws-string"] != nil)
                // A partner that refuses: its status and answer are shown. Set again without template or header, the
                // rule keeps both.
                let (_, moved) = try await call(.put, "/v1/forwarding/rules/metrica", #"{"url": "\#(base)/refusing"}"#)
                #expect(moved?["template"] == .string("appmetrica") && moved?["header"] == .string("Authorization"))
                let (_, refused) = try await call(.post, "/v1/forwarding/rules/metrica/test")
                #expect(refused?["accepted"] == .bool(false) && refused?["status"] == .number("401"))
                #expect(partners.arrivals("refusing").last?.headers["authorization"] == secret)
                // A partner that echoes the request: the answer shows the secret as (secret).
                _ = try await call(.put, "/v1/forwarding/rules/metrica", #"{"url": "\#(base)/echo"}"#)
                let (_, echoed) = try await call(.post, "/v1/forwarding/rules/metrica/test")
                #expect(echoed?["answer"]?.string?.contains("(secret)") == true)
                // Moved to another host, the rule would send the secret where it was not given for: refused unless the
                // header is given again or removed.
                let elsewhere = base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                let (movedStatus, movedAway) = try await call(.put, "/v1/forwarding/rules/metrica", #"{"url": "\#(elsewhere)/intake"}"#)
                #expect(movedStatus == .badRequest && movedAway?["message"]?.string?.contains("header") == true)

                // A network's own template.
                let mine = #"{"template": "mine", "source": "https://partner.example/docs", "fields": {"cid": "campaign"}}"#
                #expect(try await call(.put, "/v1/forwarding/templates/mine", mine).0 == .ok)
                #expect(try await call(.put, "/v1/forwarding/templates/other", mine).0 == .badRequest, "the path and the file agree")
                #expect(try await call(.put, "/v1/forwarding/templates/branch", mine.replacingOccurrences(of: "mine", with: "branch")).1?["error"] == .string("forward_template_shipped"))
                let (_, listed) = try await call(.get, "/v1/forwarding/templates")
                guard case .array(let items)? = listed?["templates"] else { Issue.record("no templates listed"); return }
                let names = items.compactMap { $0.object?["template"]?.string }
                #expect(names == ["original", "airbridge", "appmetrica", "branch", "enriched", "pull", "unity", "mine"])
                #expect(try await call(.get, "/v1/forwarding/templates/mine").1?["fields"]?.object?["cid"] == .string("campaign"))
                _ = try await call(.put, "/v1/forwarding/rules/metrica", #"{"url": "\#(base)/intake", "template": "mine", "header": null}"#)
                #expect(try await call(.delete, "/v1/forwarding/templates/mine").1?["error"] == .string("forward_template_in_use"))
                let (_, plain) = try await call(.post, "/v1/forwarding/rules/metrica/test")
                #expect(plain?["headers"]?.object?["Authorization"] == nil, "header: null removed it")
                _ = try await call(.put, "/v1/forwarding/rules/metrica", #"{"url": "\#(base)/intake", "template": "original"}"#)
                #expect(try await call(.delete, "/v1/forwarding/templates/mine").0 == .ok)
                #expect(try await call(.get, "/v1/forwarding/templates/mine").1?["error"] == .string("forward_template_not_found"))
            }
        }
    }

    /// At least once across a SIGKILL, byte for byte (`original`) and through an enriched template with a partner's
    /// header alike (issue 48): what was in flight is sent again with the same key, the same body and the same header.
    /// With the header, the partner's secret appears nowhere but in the requests to the partner: not in the receivers'
    /// logs (at debug level), their metrics, or what the CLI prints.
    @Test(arguments: ["original", "enriched"]) func aReceiverKilledMidDeliveryDeliversAgainWithTheSameKey(template: String) async throws {
        let partners = PartnerStandIn(["held": .slow(0.6), "tested": .accept])
        let work = Checkout.temporaryDirectory()
        let database = work + "/forward.sqlite"
        _ = try await countersign(["keys", "generate", "--out", work + "/key"])
        let key = try ECPrivateKey(pem: String(contentsOfFile: work + "/key/private-key.pem", encoding: .utf8))
        let arguments = ["--key", "network/0=\(work)/key/public-key.pem", "--forward-backoff", "0.05", "--forward-max-backoff", "0.2"]
        let count = 40
        let bodies = try (0..<count).map { try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid("K-\($0)")), key: key, keyID: "network/0") }
        let keys = Set((0..<count).map { "aak:" + Mint.uuid("K-\($0)") })
        let secret = "pt-\(UUID().uuidString.lowercased())"
        let logLevel = template == "original" ? "critical" : "debug"
        try Data((secret + "\n").utf8).write(to: URL(fileURLWithPath: work + "/secret"))
        try await partners.serve { base in
            var printed: [String] = []
            let first = try ReceiverProcess(database: database, extraArguments: arguments, logLevel: logLevel)
            var rule = ["forward", "set", "held", "--url", base + "/held", "--timeout", "2", "--concurrency", "4", "--template", template, "--database", database]
            if template != "original" { rule += ["--header", "X-Partner-Token", "--secret-file", work + "/secret"] }
            let set = try await countersign(rule)
            #expect(set.status == 0, "\(set.stderr)")
            printed += [set.stdout, set.stderr]
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
            printed.append(first.printed)
            let second = try ReceiverProcess(database: database, extraArguments: arguments, logLevel: logLevel)
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
            let byKey = Dictionary(grouping: partners.arrivals("held"), by: \.idempotencyKey).compactMapValues(\.first)
            for (index, body) in bodies.enumerated() {
                let arrival = try #require(byKey["aak:" + Mint.uuid("K-\(index)")])
                if template == "original" {
                    #expect(arrival.body == body, "byte for byte")
                    #expect(arrival.headers["x-partner-token"] == nil)
                } else {
                    let sent = try #require(try JSONParser.parse(arrival.body).object)
                    #expect(sent["jws-string"] == (try JSONParser.parse(body)).object?["jws-string"] && sent["dedup_key"] == .string(arrival.idempotencyKey))
                    #expect(arrival.headers["x-partner-token"] == secret)
                }
            }
            guard template != "original" else { return }
            // A test delivery through the same rule, to a partner that records it; nothing is counted.
            let delivered = try await Self.status(store)["held"]?["delivered"]
            _ = try await countersign(["forward", "set", "held", "--url", base + "/tested", "--template", template, "--database", database])
            let test = try await countersign(["forward", "test", "held", "--database", database])
            #expect(test.status == 0, "\(test.stderr)")
            let answer = try #require(try JSONParser.parse(Array(test.stdout.utf8)).object)
            #expect(answer["status"] == .number("200") && answer["accepted"] == .bool(true))
            let arrival = try #require(partners.arrivals("tested").first)
            #expect(arrival.headers["countersign-test"] == "true" && arrival.headers["x-partner-token"] == secret && arrival.idempotencyKey.hasPrefix("test-"))
            #expect(try JSONParser.parse(arrival.body).object?["countersign-test"] == .bool(true))
            #expect(try await Self.status(store)["held"]?["delivered"] == delivered, "a test counts nothing")
            printed += [test.stdout, test.stderr]
            for command in [["forward", "rules"], ["forward", "rules", "--json"], ["forward", "status", "--json"], ["forward", "list", "--state", "pending"]] {
                let run = try await countersign(command + ["--database", database])
                printed += [run.stdout, run.stderr]
            }
            var metrics = HTTPClientRequest(url: second.url + "/metrics")
            metrics.method = .GET
            let exposition = try await client.execute(metrics, timeout: .seconds(10))
            printed.append(String(buffer: try await exposition.body.collect(upTo: 8 << 20)))
            second.stop()
            printed.append(second.printed)
            #expect(printed.joined().contains("X-Partner-Token"), "the header's name is shown")
            #expect(!printed.joined().contains(secret), "the secret is in no log line, metric or CLI output")
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
        #expect(PartnerRequest.describe(IOError(errnoCode: ECONNREFUSED, reason: "connect")).answer == "refused")
        #expect(PartnerRequest.describe(HTTPClientError.deadlineExceeded).answer == "timeout")
        #expect(PartnerRequest.describe(HTTPClientError.connectTimeout).answer == "timeout")
        #expect(PartnerRequest.describe(IOError(errnoCode: ECONNRESET, reason: "read")).answer == "network")
        // A message that mentions refusal is not a refused connection.
        #expect(PartnerRequest.describe(Described(description: "the partner refused the body")).answer == "network")
    }
}
