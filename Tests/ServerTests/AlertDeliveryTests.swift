import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import PostbackMint
import Store
import Testing
import TestSupport
@testable import CountersignServer

/// Alerts delivered to webhooks on loopback (issue 49, deliverable 6): a sink that fails and then recovers gets every
/// alert once it answers, under the same idempotency key on every attempt; a receiver killed while alerts wait loses
/// none and doubles none; the rules are set, read, checked and removed over the API with specific errors.
@Suite struct AlertDeliveryTests {
    static let app = "1108187390"

    @Test func alertsReachSinksThatFailAndRecoverAcrossAKilledReceiver() async throws {
        let sinks = PartnerStandIn(["flaky": .failFirst(2, status: 503), "slack": .down])
        let work = Checkout.temporaryDirectory()
        let database = work + "/alerts.sqlite"
        _ = try await countersign(["keys", "generate", "--out", work + "/key"])
        let key = try ECPrivateKey(pem: String(contentsOfFile: work + "/key/private-key.pem", encoding: .utf8))
        let arguments = ["--key", "network/0=\(work)/key/public-key.pem", "--forward-backoff", "0.05", "--forward-max-backoff", "0.2", "--alert-interval", "0.1"]
        try await sinks.serve { base in
            for (name, sink, format) in [("quiet", "flaky", "json"), ("quiet-slack", "slack", "slack")] {
                let set = try await countersign(["alerts", "set", name, "--kind", "silence", "--app", Self.app, "--hours", "1", "--format", format,
                                                 "--url", base + "/" + sink + "?token=s3cret", "--database", database])
                #expect(set.status == 0, "\(set.stderr)")
                #expect(!set.stdout.contains("s3cret"), "the webhook's secret is not shown")
            }
            // No traffic: both rules fire at the first check. The flaky sink takes its alert at the third attempt; the
            // Slack sink is down, and the receiver is killed while its alert waits.
            let first = try ReceiverProcess(database: database, extraArguments: arguments)
            #expect(await eventually(within: 60) { sinks.accepted("flaky").count == 1 && sinks.arrivals("slack").count >= 2 })
            first.stop(SIGKILL)
            let second = try ReceiverProcess(database: database, extraArguments: arguments)
            defer { second.stop() }
            // A verified postback of the app: both rules stop firing.
            var fields = AAKPostbackFields(postbackID: Mint.uuid("alert-1"))
            fields.advertisedItemID = Int64(Self.app)!
            var request = HTTPClientRequest(url: second.url + aakPath)
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: try Mint.aak(fields, key: key, keyID: "network/0")))
            #expect(try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status == .ok)
            sinks.bringUp("slack")
            #expect(await eventually(within: 60) { sinks.accepted("flaky").count == 2 && sinks.accepted("slack").count == 2 })

            for sink in ["flaky", "slack"] {
                let byKey = Dictionary(grouping: sinks.arrivals(sink), by: \.idempotencyKey)
                #expect(byKey.count == 2, "\(sink): one firing and one resolution, however the receivers died: \(byKey.keys.sorted())")
                for (key, arrivals) in byKey {
                    // A receiver killed between the sink's 200 and recording it sends the alert again, under its key.
                    #expect(Set(arrivals.map(\.body)).count == 1, "\(sink) \(key): every attempt sends the same body")
                }
                var seen: Set<String> = []
                let states = sinks.arrivals(sink).filter { $0.answered == 200 && seen.insert($0.idempotencyKey).inserted }
                    .compactMap { try? JSONParser.parse($0.body).object }
                if sink == "flaky" {
                    #expect(states.map { $0["state"] } == [.string("firing"), .string("resolved")], "in the order they happened")
                    #expect(states.allSatisfy { $0["alert"] == .string("quiet") && $0["id"]?.string?.hasPrefix("alert:quiet:") == true })
                } else {
                    #expect(states.compactMap { $0["text"]?.string?.prefix(28) } == [":rotating_light: *quiet-slac", ":white_check_mark: *quiet-sl"])
                }
            }
            #expect(sinks.arrivals("flaky").filter { $0.answered == 503 }.count >= 2, "the flaky sink failed before it took them")
            let status = try await countersign(["alerts", "status", "--format", "json", "--database", database])
            let rows = try #require(try JSONParser.parse(Array(status.stdout.utf8)).object?["rows"])
            guard case .array(let list) = rows else { Issue.record(Comment(rawValue: status.stdout)); return }
            for row in list.compactMap(\.object) {
                #expect(row["delivered"] == .number("2") && row["pending"] == .number("0") && row["dead"] == .number("0") && row["firing"] == .bool(false), "\(row)")
            }
            #expect(!status.stdout.contains("s3cret"))
        }
    }

    @Test func rulesOverTheAPI() async throws {
        let server = LiveServer(engine: .sqlite)
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "ops", scopes: [.admin]).key
        try await server.run { client in
            func call(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> (HTTPResponse.Status, JSONObject?) {
                let response = try await client.execute(uri: uri, method: method, headers: [.authorization: "Bearer \(admin)"], body: body.map { ByteBuffer(string: $0) })
                return (response.status, response.json)
            }
            let (setStatus, set) = try await call(.put, "/v1/alerts/rules/nulls", #"{"kind": "null_share", "url": "https://hooks.example/x?key=k", "app": 7, "threshold": 0.4}"#)
            #expect(setStatus == .ok && set?["url"] == .string("https://hooks.example/...") && set?["threshold"] == .number("0.4") && set?["hours"] == .number("24"))
            for (body, field) in [(#"{"kind": "loud", "url": "https://h.example/x"}"#, "kind"), (#"{"kind": "untrusted_share", "url": "https://h.example/x", "app": 7}"#, "app"),
                                  (#"{"kind": "silence"}"#, "url"), (#"{"kind": "silence", "url": "https://h.example/x", "colour": 1}"#, "colour"), ("[]", "body")] {
                let (status, answer) = try await call(.put, "/v1/alerts/rules/bad", body)
                #expect(status == .badRequest && answer?["error"] == .string("bad_parameter"), "\(body)")
                if field != "body" { #expect(answer?["message"]?.string?.hasPrefix(field + ":") == true, "\(body): \(answer?["message"] ?? .null)") }
            }
            let (_, rules) = try await call(.get, "/v1/alerts/rules")
            #expect(rules?["rules"] == .array([.object(try #require(set))]))
            let (readingStatus, reading) = try await call(.get, "/v1/alerts/rules/nulls/reading")
            #expect(readingStatus == .ok && reading?["firing"] == .bool(false) && reading?["figures"]?.object?["whole"] == .number("0"))
            #expect(try await call(.get, "/v1/alerts/rules/absent/reading").1?["error"] == .string("alert_rule_not_found"))
            #expect(try await call(.post, "/v1/alerts/retry", #"{"rule": "nulls"}"#).1?["retried"] == .number("0"))
            #expect(try await call(.post, "/v1/alerts/retry", #"{"rule": "absent"}"#).0 == .notFound)
            let (_, deleted) = try await call(.delete, "/v1/alerts/rules/nulls")
            #expect(deleted?["removed"] == .string("nulls"))
            let (goneStatus, gone) = try await call(.delete, "/v1/alerts/rules/nulls")
            #expect(goneStatus == .notFound && gone?["error"] == .string("alert_rule_not_found"))
        }
    }
}
