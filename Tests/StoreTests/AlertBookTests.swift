import Foundation
import JWS
import Postback
import PostbackMint
import Spend
@testable import Store
import Testing
import TestSupport

/// Alerts (issue 49, deliverable 6): every kind's figures agree with a count made from the traffic as it was sent; a
/// rule queues one alert when it starts firing and one when it stops, however many receivers check at once; a digest
/// goes once a day; the outbox is bounded, claimed by lease, retried and visible in the status.
@Suite struct AlertBookTests {
    static let app: AppID = 1_108_187_390
    static let network = "example123.skadnetwork"
    static let otherNetwork = "example.adattributionkit"
    static let now = Timestamp.parse("2026-11-20T12:00:00Z")!

    /// One postback as sent, and what a count from raw rows needs to know of it.
    struct Sent {
        var at: Date
        var network: String
        var window = 0
        var won = true
        var value: Int?
        var coarse: String?
        /// verified, unverifiable (an unknown key) or invalid (not a postback at all).
        var outcome = "verified"
        var label: String { value.map { "fine \($0)" } ?? coarse.map { "coarse \($0)" } ?? "none" }
        var countedInstall: Bool { outcome == "verified" && won && window == 0 }
    }

    /// Stores `traffic` as the receivers would, and flushes the arrival counts.
    static func store(_ traffic: [Sent], into store: StoreDatabase) throws {
        let key = try ECPrivateKey.generate(), stranger = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        var intakes: [Intake] = []
        for (index, sent) in traffic.enumerated() {
            var fields = AAKPostbackFields(postbackID: Mint.uuid("A-\(index)-\(sent.at.timeIntervalSince1970)"))
            fields.advertisedItemID = app.number
            fields.adNetworkID = sent.network
            fields.postbackSequenceIndex = sent.window
            fields.didWin = sent.won
            fields.conversionValue = sent.window == 0 ? sent.value : nil
            fields.coarseConversionValue = sent.window == 0 ? sent.coarse : (sent.coarse ?? "low")
            let body: [UInt8] = switch sent.outcome {
            case "invalid": Array("{\"not\": \"a postback \(index)\"}".utf8)
            case "unverifiable": try Mint.aak(fields, key: stranger, keyID: "unknown/1")
            default: try Mint.aak(fields, key: key, keyID: "net/0")
            }
            let result = verifier.verify(body, expecting: .aak)
            #expect(result.outcome.rawValue == sent.outcome, "\(sent)")
            intakes.append(Intake(receivedAt: sent.at, remoteAddress: nil, route: IntakeRoute(.aak), body: body, result: result,
                                  decision: TrustPolicy(allowDevelopment: false).decide(result)))
        }
        _ = try store.ledger.persist(intakes)
        try store.arrivals.flush()
    }

    static func hoursAgo(_ hours: Double) -> Date { now.addingTimeInterval(-hours * 3600) }

    @Test(arguments: TestEngine.allCases) func everyKindReadsWhatARawCountGives(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        var traffic: [Sent] = []
        for index in 0..<80 {
            var sent = Sent(at: Self.hoursAgo(Double(index) * 0.4), network: index % 3 == 0 ? Self.otherNetwork : Self.network)
            sent.window = index % 5 == 4 ? 1 : 0
            sent.won = index % 7 != 6
            switch index % 4 {
            case 0: break
            case 1: sent.coarse = index < 20 ? "high" : "low"
            default: sent.value = index < 20 ? 40 + index % 3 : index % 8
            }
            traffic.append(sent)
        }
        for index in 0..<6 { traffic.append(Sent(at: Self.hoursAgo(Double(index) * 3 + 1), network: Self.network, value: 3, outcome: "unverifiable")) }
        for index in 0..<5 { traffic.append(Sent(at: Self.hoursAgo(Double(index) * 7 + 0.5), network: Self.network, outcome: "invalid")) }
        // Installs 5 to 14 days ago for the claim gap's days, and the network's claims for those days.
        var claims: [SpendRow] = []
        for day in 5..<16 {
            for index in 0..<(day % 4 + 2) {
                traffic.append(Sent(at: Self.now.addingTimeInterval(-Double(day) * 86_400 + Double(index) * 3600), network: Self.network, value: 1))
            }
            let text = String(Timestamp.format(Self.now.addingTimeInterval(-Double(day) * 86_400)).prefix(10))
            claims.append(SpendRow(day: text, app: Self.app, adNetwork: Self.network, claimedInstalls: Int64(day % 5 + 3), spendMicros: 10_000_000, currency: "USD"))
        }
        try Self.store(traffic, into: store)
        _ = try await store.spend.importSpend(claims, provenance: ImportProvenance(importedBy: "test", fileName: nil, format: "generic", bytes: [1]))
        for (index, state) in ["dead", "dead", "dead", "pending"].enumerated() {
            try await store.engine.write { db in
                _ = try db.execute("INSERT INTO forward_outbox (partner, postback_id, state, created_at, deadline, next_attempt_at) VALUES (?, ?, ?, '', 0, 0)",
                                   [index == 0 ? "other" : "acme", index + 1, state])
            }
        }
        let url = "https://hooks.example/alerts"
        let recent = traffic.filter { $0.at >= Self.hoursAgo(24) }

        // silence: the last verified arrival of the app from the network.
        let silence = AlertRule(name: "silence", kind: .silence, url: url, app: Self.app, adNetwork: Self.network, hours: 0.5)
        let lastArrival = traffic.filter { $0.outcome == "verified" && $0.network == Self.network }.map(\.at).max()
        #expect(try await store.alerts.figures(silence, now: Self.now) == .silence(lastArrival: lastArrival))
        #expect(try await store.alerts.reading(silence, now: Self.now).firing == (Self.now.timeIntervalSince(lastArrival!) >= 1800))
        let quiet = AlertRule(name: "quiet", kind: .silence, url: url, app: AppID(42), hours: 1)
        #expect(try await store.alerts.reading(quiet, now: Self.now).firing, "an app with no traffic at all is silent")

        // untrusted_share: every arrival of the last 24 hours, and the invalid or unverifiable among them.
        let untrusted = AlertRule(name: "untrusted", kind: .untrustedShare, url: url, threshold: 0.1, minimum: 10)
        let untrustedFigures = AlertFigures.share(part: recent.filter { $0.outcome != "verified" }.count, whole: recent.count)
        #expect(try await store.alerts.figures(untrusted, now: Self.now) == untrustedFigures)
        #expect(try await store.alerts.reading(untrusted, now: Self.now).firing == (Double(recent.filter { $0.outcome != "verified" }.count) / Double(recent.count) >= 0.1))

        // null_share: the network's counted first-window installs of the last 24 hours, and those without a value.
        let installs = recent.filter { $0.countedInstall && $0.network == Self.network }
        let nulls = AlertRule(name: "nulls", kind: .nullShare, url: url, app: Self.app, adNetwork: Self.network, threshold: 0.2, minimum: 5)
        #expect(try await store.alerts.figures(nulls, now: Self.now) == .share(part: installs.filter { $0.label == "none" }.count, whole: installs.count))
        #expect(installs.count >= 10 && installs.contains { $0.label == "none" })

        // value_mix: the last 3 hours against the 21 before.
        let mix = AlertRule(name: "mix", kind: .valueMix, url: url, app: Self.app, hours: 3, threshold: 0.3, minimum: 2)
        func counts(_ sent: [Sent]) -> [String: Int] { Dictionary(grouping: sent, by: \.label).mapValues(\.count) }
        let counted = traffic.filter(\.countedInstall)
        let expectedMix = AlertFigures.valueMix(recent: counts(counted.filter { $0.at >= Self.hoursAgo(3) }),
                                                before: counts(counted.filter { $0.at >= Self.hoursAgo(24) && $0.at < Self.hoursAgo(3) }))
        #expect(try await store.alerts.figures(mix, now: Self.now) == expectedMix)
        #expect(try await store.alerts.reading(mix, now: Self.now).firing, "values 40-42 and high only in the last hours: the mix moved")

        // dead_letters: of one forwarding rule, and of all.
        #expect(try await store.alerts.figures(AlertRule(name: "dead", kind: .deadLetters, url: url, partner: "acme"), now: Self.now) == .deadLetters(2))
        #expect(try await store.alerts.figures(AlertRule(name: "dead", kind: .deadLetters, url: url), now: Self.now) == .deadLetters(3))

        // claim_gap: claims against verified installs by estimated install day, 11 to 4 days before today.
        let gap = AlertRule(name: "gap", kind: .claimGap, url: url, app: Self.app, adNetwork: Self.network, minimum: 5)
        let (from, to) = ("2026-11-09", "2026-11-16")
        let estimated = try await store.rows("""
            SELECT estimated_install_at FROM conversions
            WHERE countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install' AND ad_network_id = ?
            """, [Self.network]).map { String(try $0.get(at: 0, as: String.self).prefix(10)) }
        let verified = estimated.filter { $0 >= from && $0 < to }.count
        let claimed = claims.filter { $0.day >= from && $0.day < to }.reduce(0) { $0 + Int($1.claimedInstalls ?? 0) }
        #expect(try await store.alerts.figures(gap, now: Self.now) == .claimGap(claimed: claimed, verified: verified, from: from, to: to))
        #expect(verified > 0 && claimed > verified)
    }

    @Test(arguments: TestEngine.allCases) func aRuleQueuesOneAlertWhenItStartsAndOneWhenItStopsHoweverManyCheck(engine: TestEngine) async throws {
        let database = try engine.freshDatabase()
        let settings = StoreSettings(location: try DatabaseLocation(database), durability: .normal)
        let (store, other) = (try TestStore.open(settings), try TestStore.open(settings))
        try await store.alerts.set(AlertRule(name: "stopped", kind: .silence, url: "https://hooks.example/a?token=secret", format: .slack, app: Self.app, hours: 1),
                                   now: Self.hoursAgo(10))
        var expected: [String] = []
        // Traffic that stops and starts again four times; both receivers check every 20 minutes, at once.
        var arrivals: [Date] = []
        for burst in 0..<4 { arrivals.append(Self.hoursAgo(Double(9 - burst * 2))) }
        var firing = false
        var moment = Self.hoursAgo(9.5)
        while moment <= Self.now {
            let due = arrivals.filter { $0 <= moment }
            if let next = due.last, !arrivals.isEmpty {
                try Self.store([Sent(at: next, network: Self.network, value: 1)], into: store)
                arrivals.removeAll { $0 <= moment }
            }
            let last = try await store.alerts.figures(AlertRule(name: "x", kind: .silence, url: "https://x.example", app: Self.app, hours: 1), now: moment)
            guard case .silence(let lastArrival) = last else { Issue.record("\(last)"); return }
            let shouldFire = lastArrival.map { moment.timeIntervalSince($0) >= 3600 } ?? true
            let changed = shouldFire != firing
            if changed { expected.append(shouldFire ? "firing" : "resolved") }
            firing = shouldFire
            let checked = moment
            async let first = store.alerts.check(now: checked)
            async let second = other.alerts.check(now: checked)
            let queued = try await first + second
            #expect(queued.map(\.state.rawValue) == (changed ? [expected.last!] : []), "\(moment): one of the two receivers queues it")
            moment = moment.addingTimeInterval(1200)
        }
        let keys = try await store.column("SELECT event_key FROM alert_outbox ORDER BY id", as: String.self)
        #expect(keys.map { String($0.prefix { $0 != ":" }) } == expected)
        #expect(expected.count >= 5, "\(expected)")
        // A resolution names the firing it ends.
        for (start, end) in zip(keys, keys.dropFirst()) where start.hasPrefix("firing:") {
            #expect(end == "resolved:" + start.dropFirst("firing:".count))
        }

        // Delivering: one alert of a rule at a time, oldest first, claimed by lease; accepted or failed, dead and
        // retried; the status shows each.
        let first = try await store.alerts.claim(limit: 10, now: Self.now)
        #expect(first.map(\.key) == [keys[0]], "a rule's later alerts wait for its oldest")
        #expect(try await other.alerts.claim(limit: 10, now: Self.now).isEmpty, "a claimed alert is not claimed again, nor one behind it")
        let body = try #require(try JSONParser.parse(first[0].body).object)
        #expect(body["text"]?.string?.contains("*stopped* firing (2026-11-20 ") == true && body["text"]?.string?.contains("UTC): No verified postback of app \(Self.app)") == true, "\(body)")
        #expect(first[0].idempotencyKey == "alert:stopped:\(keys[0])")
        #expect(try await store.alerts.delivered(first[0], now: Self.now))
        let second = try await other.alerts.claim(limit: 10, now: Self.now)
        #expect(second.map(\.key) == [keys[1]])
        #expect(try await store.alerts.failed(second[0], answer: "503", error: "HTTP 503", decision: .dead, now: Self.now))
        #expect(try await store.alerts.delivered(second[0], now: Self.now) == false, "a finished claim records nothing more")
        #expect(try await store.alerts.claim(limit: 10, now: Self.now).map(\.key) == [keys[2]], "a dead alert holds up no other")
        var status = try await store.alerts.status(now: Self.now)
        func cell(_ column: String) -> JSONValue? { status.columns.firstIndex(of: column).map { status.rows[0][$0] } }
        #expect(cell("delivered") == .number("1") && cell("dead") == .number("1") && cell("last_answer") == .string("503") && cell("in_flight") == .number("1"))
        #expect(cell("url") == .string("https://hooks.example/..."), "the webhook's secret is not shown")
        #expect(try await store.alerts.retry(rule: "stopped", now: Self.now) == 1)
        #expect(try await store.alerts.retry(rule: "nobody", now: Self.now) == nil)
        let again = try await store.alerts.claim(limit: 10, now: Self.now.addingTimeInterval(30))
        #expect(again.map(\.key) == [keys[1]] && again.first?.attempts == 1, "the retried alert, oldest again, with its attempt counted")
        status = try await store.alerts.status(now: Self.now)
        #expect(cell("dead") == .number("0"))

        // Bounded: beyond the most a rule holds, alerts are counted as dropped.
        try await store.alerts.set(AlertRule(name: "bounded", kind: .deadLetters, url: "https://hooks.example/b"), now: Self.now)
        let queued = try await store.engine.write { db in
            try (0..<(AlertRule.maximumEntries + 3)).filter { index in
                try AlertBook.queue(db, AlertEvent(rule: "bounded", kind: .deadLetters, state: .firing, key: "k\(index)", at: Self.now, summary: "", figures: JSONObject()),
                                    now: Self.now)
            }.count
        }
        #expect(queued == AlertRule.maximumEntries)
        status = try await store.alerts.status(now: Self.now)
        #expect(status.rows.first { $0[0] == .string("bounded") }?[status.columns.firstIndex(of: "dropped")!] == .number("3"))
        #expect(try await store.alerts.remove("bounded") == AlertRule.maximumEntries)
    }

    @Test(arguments: TestEngine.allCases) func settingARuleAgainDoublesNothingAndClaimsNeverOverlap(engine: TestEngine) async throws {
        let database = try engine.freshDatabase()
        let settings = StoreSettings(location: try DatabaseLocation(database), durability: .normal)
        let (store, other) = (try TestStore.open(settings), try TestStore.open(settings))
        let rule = AlertRule(name: "quiet", kind: .silence, url: "https://hooks.example/a", app: Self.app, hours: 1)
        try await store.alerts.set(rule, now: Self.hoursAgo(3))
        let stored = { try await store.alerts.rules().first { $0.name == "quiet" }! }
        #expect(try await store.alerts.check(now: Self.hoursAgo(2)).map(\.state) == [.firing])
        // The same condition set again (a new webhook and format): still firing, nothing queued.
        var moved = rule
        moved.url = "https://chat.example/hook"
        moved.format = .slack
        try await store.alerts.set(moved, now: Self.hoursAgo(1.5))
        #expect(try await store.alerts.check(now: Self.hoursAgo(1)).isEmpty, "a rule set again with the same condition does not fire again")
        let pending = try await store.alerts.claim(limit: 10, now: Self.hoursAgo(1))
        #expect(pending.map(\.url) == ["https://chat.example/hook"], "queued alerts go where the rule sends now")
        #expect(try JSONParser.parse(pending[0].body).object?["text"]?.string?.hasPrefix(":rotating_light: *quiet* firing (") == true, "in the rule's format now")
        #expect(try await store.alerts.delivered(pending[0], now: Self.hoursAgo(1)))
        // A changed condition while firing: its firing is resolved, and the rule judged afresh.
        var wider = try await stored()
        wider.hours = 2
        try await store.alerts.set(wider, now: Self.hoursAgo(0.5))
        let resolved = try await store.alerts.claim(limit: 10, now: Self.hoursAgo(0.5))
        #expect(resolved.map(\.key) == ["resolved:" + Timestamp.format(Self.hoursAgo(2))])
        #expect(try await store.alerts.check(now: Self.hoursAgo(0.4)).map(\.state) == [.firing], "judged afresh")

        // Many alerts, two receivers claiming at once: no alert is claimed twice.
        for index in 0..<30 {
            try await store.alerts.set(AlertRule(name: "r\(index)", kind: .deadLetters, url: "https://hooks.example/\(index)"), now: Self.now)
        }
        try await store.engine.write { db in
            _ = try db.execute("INSERT INTO forward_outbox (partner, postback_id, state, created_at, deadline, next_attempt_at) VALUES ('p', 1, 'dead', '', 0, 0)")
        }
        #expect(try await store.alerts.check(now: Self.now).count == 30)
        var claimed: [String] = []
        for _ in 0..<40 {
            async let first = store.alerts.claim(limit: 5, now: Self.now)
            async let second = other.alerts.claim(limit: 5, now: Self.now)
            let round = try await (first + second).map(\.rule)
            claimed += round
            if round.isEmpty { break }
        }
        #expect(claimed.count == Set(claimed).count && claimed.count >= 30, "\(claimed.sorted())")
    }

    @Test(arguments: TestEngine.allCases) func aDigestGoesOnceADayWithYesterdaysInstallsByNetwork(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        var traffic: [Sent] = []
        for index in 0..<30 {
            var sent = Sent(at: Self.now.addingTimeInterval(-Double(index) * 3600), network: index % 2 == 0 ? Self.network : Self.otherNetwork, value: 2)
            sent.window = index % 5 == 4 ? 1 : 0
            traffic.append(sent)
        }
        try Self.store(traffic, into: store)
        let rule = AlertRule(name: "daily", kind: .digest, url: "https://hooks.example/d", hour: 8)
        try await store.alerts.set(rule, now: Self.hoursAgo(48))
        #expect(try await store.alerts.reading(rule, now: Self.hoursAgo(5)).figures["day"] == .string("2026-11-19"), "a reading shows yesterday's at any hour")
        #expect(try await store.alerts.check(now: Self.hoursAgo(5)).isEmpty, "07:00: not yet")
        let digest = try #require(try await store.alerts.check(now: Self.hoursAgo(3.5)).first)
        #expect(digest.key == "digest:2026-11-19")
        let rows = try #require(digest.figures["rows"].flatMap { if case .array(let rows) = $0 { rows } else { nil } })
        for network in [Self.network, Self.otherNetwork] {
            let expected = traffic.filter { $0.countedInstall && $0.network == network && Timestamp.format($0.at).hasPrefix("2026-11-19") }.count
            let row = rows.compactMap(\.object).first { $0["ad_network"] == .string(network) }
            #expect(row?["installs"] == .number(String(expected)), "\(network): \(rows)")
            #expect(expected > 0)
        }
        #expect(try await store.alerts.check(now: Self.hoursAgo(3)).isEmpty, "once a day")
        #expect(try await store.alerts.check(now: Self.now.addingTimeInterval(20 * 3600)).map(\.key) == ["digest:2026-11-20"])
    }
}

/// The pure parts of alerts: rules refused by field, bodies in each format, the mix distance, the transitions.
@Suite struct AlertRuleTests {
    @Test func rulesAreCheckedFieldByField() throws {
        let url = "https://hooks.example/x"
        func problem(_ rule: AlertRule) -> String? {
            do { try AlertRule.check(rule) } catch { return error.field }
            return nil
        }
        #expect(problem(AlertRule(name: "ok", kind: .silence, url: url, app: 1)) == nil)
        #expect(problem(AlertRule(name: "Bad Name", kind: .silence, url: url)) == "name")
        #expect(problem(AlertRule(name: "a", kind: .silence, url: "ftp://x")) == "url")
        // A bracketed host must be an IPv6 address (schemathesis found "[F5]" taken for one).
        for url in ["http://[F5]:8054/x", "http://[::1::2]/x", "http://[1:2:3:4:5:6:7:8:9]/x"] {
            #expect(problem(AlertRule(name: "a", kind: .silence, url: url)) == "url", "\(url)")
            #expect(throws: ForwardRule.Problem.self) { try ForwardRule.check(ForwardRule(name: "a", url: url)) }
        }
        #expect(problem(AlertRule(name: "a", kind: .silence, url: "http://[::1]:8080/x")) == nil)
        #expect(problem(AlertRule(name: "a", kind: .silence, url: "http://[2001:db8::7]/x")) == nil)
        #expect(problem(AlertRule(name: "a", kind: .untrustedShare, url: url, app: 1)) == "app")
        #expect(problem(AlertRule(name: "a", kind: .nullShare, url: url, threshold: 1.5)) == "threshold")
        #expect(problem(AlertRule(name: "a", kind: .deadLetters, url: url, threshold: 0.5)) == "threshold")
        #expect(problem(AlertRule(name: "a", kind: .silence, url: url, threshold: 0.5)) == "threshold")
        #expect(problem(AlertRule(name: "a", kind: .digest, url: url, hours: 3)) == "hours")
        #expect(problem(AlertRule(name: "a", kind: .silence, url: url, hours: 0)) == "hours")
        #expect(problem(AlertRule(name: "a", kind: .silence, url: url, partner: "acme")) == "partner")
        #expect(problem(AlertRule(name: "a", kind: .digest, url: url, hour: 24)) == "hour")
        #expect(problem(AlertRule(name: "a", kind: .digest, url: url, timeZone: "CET")) == "time_zone")
        #expect(problem(AlertRule(name: "a", kind: .digest, url: url, currency: "ZZZ")) == "currency")
        let parsed = try AlertRule(name: "n", json: try #require(try JSONParser.parse(Array(#"{"kind": "null_share", "url": "https://h.example/x", "app": 7, "threshold": 0.4}"#.utf8)).object))
        #expect(parsed == AlertRule(name: "n", kind: .nullShare, url: "https://h.example/x", app: 7, threshold: 0.4))
        #expect(throws: AlertRule.Problem.self) { try AlertRule(name: "n", json: JSONObject([JSONMember(key: "kind", value: .string("silence")), JSONMember(key: "colour", value: .string("red"))])) }
    }

    @Test func theMixDistanceIsHalfTheSumOfTheShareDifferences() {
        #expect(AlertFigures.totalVariation(["a": 5, "b": 5], ["a": 10, "b": 10]) == 0)
        #expect(AlertFigures.totalVariation(["a": 5], ["b": 3]) == 1)
        #expect(abs(AlertFigures.totalVariation(["a": 3, "b": 1], ["a": 1, "b": 1]) - 0.25) < 1e-12)
        #expect(AlertFigures.totalVariation([:], ["a": 1]) == 0)
    }

    @Test func eachFormatCarriesTheAlert() throws {
        let event = AlertEvent(rule: "r", kind: .nullShare, state: .firing, key: "firing:2026-11-20T12:00:00.000Z", at: Date(timeIntervalSince1970: 0),
                               summary: "60% were null.", figures: JSONObject([JSONMember(key: "share", value: .number("0.6"))]))
        let json = try #require(try JSONParser.parse(event.body(.json)).object)
        #expect(json["alert"] == .string("r") && json["state"] == .string("firing") && json["id"] == .string(event.idempotencyKey))
        #expect(json["figures"]?.object?["share"] == .number("0.6"))
        let slack = try #require(try JSONParser.parse(event.body(.slack)).object)
        #expect(slack.members.map(\.key) == ["text"] && slack["text"] == .string(":rotating_light: *r* firing (1970-01-01 00:00 UTC): 60% were null."))
        #expect(AlertEvent(json: event.body(.json)) == event, "the outbox keeps the JSON and makes the rule's format from it")
    }

    @Test func docsStateEachKindAsTheCodeJudgesIt() throws {
        let document = try String(contentsOf: Checkout.root.appendingPathComponent("docs/alerts.md"), encoding: .utf8)
        for kind in AlertKind.allCases {
            #expect(document.contains("### `\(kind.rawValue)`\n\n\(kind.definition)\n"), "docs/alerts.md: \(kind.rawValue)")
        }
    }

    @Test func aDigestIsDueFromItsHourInItsZoneOnceADayAndCatchesUpOnMissedDays() throws {
        let rule = AlertRule(name: "d", kind: .digest, url: "https://h.example/x", hour: 9, timeZone: "Europe/Berlin")
        let at = { (text: String) in Timestamp.parse(text)! }
        #expect(AlertTransition.digestDays(rule: rule, lastDigestDay: nil, now: at("2026-11-20T07:59:00Z")) == [], "08:59 in Berlin")
        #expect(AlertTransition.digestDays(rule: rule, lastDigestDay: nil, now: at("2026-11-20T08:00:00Z")) == ["2026-11-19"], "a new rule: yesterday only")
        #expect(AlertTransition.digestDays(rule: rule, lastDigestDay: "2026-11-19", now: at("2026-11-20T20:00:00Z")) == [])
        #expect(AlertTransition.digestDays(rule: rule, lastDigestDay: "2026-11-19", now: at("2026-11-20T23:30:00Z")) == [], "00:30 on the 21st in Berlin, before 9")
        #expect(AlertTransition.digestDays(rule: rule, lastDigestDay: "2026-11-16", now: at("2026-11-20T10:00:00Z")) == ["2026-11-17", "2026-11-18", "2026-11-19"],
                "days no receiver checked are caught up")
        #expect(AlertTransition.digestDays(rule: rule, lastDigestDay: "2026-10-01", now: at("2026-11-20T10:00:00Z")).count == AlertTransition.mostDaysCaughtUp)
        // West of UTC: at 06:00 UTC it is still the 19th in Los Angeles, so yesterday is the 18th.
        let west = AlertRule(name: "w", kind: .digest, url: "https://h.example/x", hour: 0, timeZone: "America/Los_Angeles")
        #expect(AlertTransition.digestDays(rule: west, lastDigestDay: nil, now: at("2026-11-20T06:00:00Z")) == ["2026-11-18"])
    }

    @Test func fieldsAKindDoesNotReadAreRefused() {
        let url = "https://h.example/x"
        func problem(_ rule: AlertRule) -> String? {
            do { try AlertRule.check(rule) } catch { return error.field }
            return nil
        }
        #expect(problem(AlertRule(name: "a", kind: .silence, url: url, minimum: 5)) == "minimum")
        #expect(problem(AlertRule(name: "a", kind: .nullShare, url: url, hour: 3)) == "hour")
        #expect(problem(AlertRule(name: "a", kind: .nullShare, url: url, timeZone: "Europe/Berlin")) == "time_zone")
        #expect(problem(AlertRule(name: "a", kind: .deadLetters, url: url, currency: "EUR")) == "currency")
        #expect(problem(AlertRule(name: "a", kind: .valueMix, url: url, hours: 100)) == "hours")
        var missing = AlertRule(name: "a", kind: .nullShare, url: url)
        missing.threshold = nil
        #expect(problem(missing) == "threshold")
        missing = AlertRule(name: "a", kind: .silence, url: url)
        missing.hours = nil
        #expect(problem(missing) == "hours")
    }
}
