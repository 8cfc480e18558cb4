import ConversionSchema
import Foundation
import JWS
import Postback
import PostbackMint
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// `simulate` for real trials (issue 27, item 1): weeks of installs for one's own app, written with their arrival
/// times, give a report by install day that equals what the generator's own ledger says, and a claims file that
/// imports.
@Suite struct SimulateTrialTests {
    /// The fields of a sent body that say whether it is a winning first-window install postback, read from the body.
    static func fields(_ body: [UInt8]) throws -> JSONObject {
        let outer = try #require(try JSONParser.parse(body).object)
        guard let jws = outer["jws-string"]?.string else { return outer }
        let payload = try #require(Base64.decode(Array(jws.split(separator: ".")[1].utf8), alphabet: .url))
        return try #require(try JSONParser.parse(payload).object)
    }

    @Test func aMonthForOneAppIsWhatTheLedgerSays() async throws {
        let directory = Checkout.temporaryDirectory()
        let database = directory + "/trial.sqlite"
        #expect(try await countersign(["keys", "generate", "--out", directory + "/key"]).status == 0)
        let key = try ECPrivateKey(pem: String(contentsOfFile: directory + "/key/private-key.pem", encoding: .utf8))
        let app: Int64 = 1_108_187_390
        #expect(try await countersign(["schema", "upload", Checkout.root.appendingPathComponent("examples/schemas/game.json").path, "--database", database]).status == 0)
        // Far enough back that every window has arrived, so the run and this test see the same postbacks.
        let today = Timestamp.parse(String(Timestamp.format(Date()).prefix(10)))!
        let start = today.addingTimeInterval(-80 * 86_400)
        let startText = String(Timestamp.format(start).prefix(10))
        let run = try await countersign(["simulate", "--start", startText, "--days", "30", "--seed", "3", "--installs-per-day", "20",
                                   "--signing-key", directory + "/key/private-key.pem", "--database", database, "--claims-out", directory + "/claims.csv"])
        #expect(run.status == 0, "\(run.stderr)")
        // An 80-day-old start is older than live traffic's retention: the run says how to keep it (issue 49, finding 9).
        #expect(run.stderr.contains("serve with --unverifiable-retention 81 --rejected-retention 81"), "\(run.stderr)")
        let summary = try #require(try JSONParser.parse(Array(run.stdout.utf8)).object)
        #expect(summary["apps"] == .array([.number(String(app))]), "the app with a schema is the default")

        // The run follows the app's schema with the default genre's curve.
        var plan = TrialPlan(apps: [app], start: start, days: 30, installsPerDay: 20, now: Date(), seed: 3)
        plan.genre = .casualGame
        plan.worth = [app: TrialWriter.worth(try #require(SchemaReader.check(try ExampleSchema.document("game")).schema), at: start)]
        let ledger = try Trial.generate(plan, key: key, keyID: "countersign-simulator/0", forger: try ECPrivateKey.generate())
        #expect(summary["installs"]?.wholeNumber == Int64(ledger.installs.filter { !$0.reEngagement }.count))
        #expect(Set(ledger.installs.map { Timestamp.format($0.time).prefix(10) }).count == 30, "installs on each of the 30 days")
        // The ledger's winning first-window install postbacks, on the install day metrics.md estimates from arrival.
        var expected: [String: Int] = [:]
        for sent in ledger.sent where sent.kind == .original {
            let fields = try Self.fields(sent.body)
            let window = fields["postback-sequence-index"]?.int64 ?? 0
            let didWin = fields["did-win"]?.bool ?? true
            guard window == 0, didWin, fields["conversion-type"]?.string != "re-engagement" else { continue }
            let legacy = fields["version"]?.string.map { $0 != "4.0" } ?? false
            let day = String(Timestamp.format(sent.arrival.addingTimeInterval(legacy ? -36 * 3600 : -84 * 3600)).prefix(10))
            expected[day, default: 0] += 1
        }
        let report = try await countersign(["report", "--by", "install_day", "--app", String(app), "--from", startText, "--format", "json", "--database", database])
        #expect(report.status == 0, "\(report.stderr)")
        guard case .array(let rows)? = try JSONParser.parse(Array(report.stdout.utf8)).object?["rows"] else { Issue.record("no rows: \(report.stdout)"); return }
        var reported: [String: Int] = [:]
        for row in rows.compactMap(\.object) {
            guard let day = row["install_day"]?.string, let installs = row["installs"]?.wholeNumber, installs > 0 else { continue }
            reported[day, default: 0] += Int(installs)
        }
        #expect(reported == expected)
        #expect(reported.count >= 29, "a month of install days: \(reported.count)")
        // The networks' claims import, and the first network claims more than it drove.
        let imported = try await countersign(["spend", "import", directory + "/claims.csv", "--database", database])
        #expect(imported.status == 0, "\(imported.stderr)")
        let performance = try await countersign(["performance", "--by", "ad_network", "--format", "json", "--database", database])
        guard case .array(let networks)? = try JSONParser.parse(Array(performance.stdout.utf8)).object?["rows"] else { Issue.record("no performance"); return }
        let over = networks.compactMap(\.object).first { $0["ad_network"]?.string == "example123.skadnetwork" }
        #expect((over?["claimed_installs"]?.wholeNumber ?? 0) > (over?["installs"]?.wholeNumber ?? 0))
    }

    /// Issue 49, deliverable 8: a trial's installs spend what the genre's published curve says (docs/cli.md#trial-revenue),
    /// and each postback carries the value the app would send for it: the one whose revenue range in the schema holds
    /// what the install spent in the postback's window (the nearest range when none does), decoded here by the schema.
    @Test(arguments: TrialGenre.allCases) func installsSpendTheGenresCurveAndSendTheValuesThatHoldIt(genre: TrialGenre) throws {
        let app: Int64 = 1_108_187_390
        let schema = try #require(SchemaReader.check(try ExampleSchema.document(genre == .subscription ? "subscription" : "game")).schema)
        // Both schemas' first versions are in force from here to the last window.
        let start = Timestamp.parse("2026-06-08T00:00:00Z")!
        var plan = TrialPlan(apps: [app], start: start, days: 30, installsPerDay: 400, now: start.addingTimeInterval(90 * 86_400), seed: 5)
        plan.genre = genre
        plan.worth = [app: TrialWriter.worth(schema, at: start)]
        let ledger = try Trial.generate(plan, key: try ECPrivateKey.generate(), keyID: "countersign-simulator/0", forger: try ECPrivateKey.generate())
        let installs = ledger.installs.filter { !$0.reEngagement }
        for window in 0...2 {
            let perInstall = installs.map { $0.spent[...window].reduce(0, +) }.reduce(0, +) / Double(installs.count)
            #expect(abs(perInstall / genre.revenuePerInstall[window] - 1) < 0.2, "\(genre) by window \(window): \(perInstall) per install")
        }
        // Each value's revenue range, decoded here by the schema once per window: fine values by number, coarse by level.
        func range(_ window: Int, fine: Int?, coarse: CoarseValue.Level?) -> (min: Double, max: Double)? {
            guard case .success(let decoded) = SchemaDecoder.decode(schema, conversionClass: .install, window: window, fine: fine, coarse: coarse,
                                                                    sourceIdentifier: nil, at: start), decoded.defined else { return nil }
            return (decoded.revenue?.min ?? 0, decoded.revenue?.max ?? 0)
        }
        let fineRanges = (0...2).map { window in Dictionary(uniqueKeysWithValues: (0...63).compactMap { value in range(window, fine: value, coarse: nil).map { (value, $0) } }) }
        let coarseRanges = (0...2).map { window in
            Dictionary(uniqueKeysWithValues: CoarseValue.Level.allCases.compactMap { level in range(window, fine: nil, coarse: level).map { (level.rawValue, $0) } })
        }
        var checked = 0
        for sent in ledger.sent where sent.kind == .original {
            let outer = try #require(try JSONParser.parse(sent.body).object), fields = try Self.fields(sent.body)
            guard fields["did-win"]?.bool ?? true, fields["conversion-type"]?.string != "re-engagement" else { continue }
            let window = Int(fields["postback-sequence-index"]?.int64 ?? 0)
            let spent = ledger.installs[sent.install].spent[window]
            func distance(_ range: (min: Double, max: Double)) -> Double { max(0, range.min - spent, spent - range.max) }
            let sentRange: (min: Double, max: Double)?, nearest: Double?
            if let fine = outer["conversion-value"]?.int64 {
                (sentRange, nearest) = (fineRanges[window][Int(fine)], fineRanges[window].values.map(distance).min())
            } else if let coarse = outer["coarse-conversion-value"]?.string {
                (sentRange, nearest) = (coarseRanges[window][coarse], coarseRanges[window].values.map(distance).min())
            } else {
                continue
            }
            #expect(sentRange.map(distance) == nearest, "\(genre): window \(window) sent a value of \(String(describing: sentRange)) for \(spent)")
            checked += 1
        }
        #expect(checked > 5_000, "\(checked) values checked")
    }

    /// A trial ending today holds only what has arrived: no original, copy or fake is stamped after the run's "now".
    @Test func nothingArrivesAfterNow() throws {
        let now = Timestamp.parse("2026-11-20T09:00:00Z")!
        let plan = TrialPlan(apps: [1_108_187_390], start: now.addingTimeInterval(-30 * 86_400), days: 31, installsPerDay: 60, now: now, seed: 7)
        let ledger = try Trial.generate(plan, key: try ECPrivateKey.generate(), keyID: "countersign-simulator/0", forger: try ECPrivateKey.generate())
        #expect(ledger.sent.contains { $0.kind != .original }, "the trial has copies and fakes")
        let late = ledger.sent.filter { $0.arrival > now }.map(\.arrival)
        #expect(late.count == 0, "\(late.count) postbacks arrive after now, the latest \(late.max().map(Timestamp.format) ?? "")")
    }

    @Test func aTrialSaysWhatIsWrongWithItsOptions() async throws {
        let database = Checkout.temporaryDirectory() + "/trial.sqlite"
        for (arguments, words) in [
            (["--days", "30", "--url", "http://127.0.0.1:1"], "a trial (--days, --start) writes history into --database"),
            (["--days", "0"], "--days must be 1 to 400"),
            (["--days", "30", "--start", "2026-13-01"], "--start must be a date"),
            (["--days", "30", "--campaigns", "1,22"], "--campaigns: 1 is not two digits"),
            (["--days", "30", "--ad-network", "Not A Network"], "--ad-network: Not A Network is not an ad network id"),
        ] {
            let result = try await countersign(["simulate"] + arguments + ["--database", database])
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
        }
        let noApp = try await countersign(["simulate", "--days", "30", "--database", database, "--key-out", Checkout.temporaryDirectory()])
        #expect(noApp.status == 2)
        #expect(noApp.stderr.contains("--app: name your app"), "\(noApp.stderr)")
    }
}

/// A trial's networks each bill in their own currency (issue 49, finding 9, in part).
@Suite struct SimulateCurrencyTests {
    @Test func eachNetworkBillsInTheCurrencyItNames() async throws {
        let directory = Checkout.temporaryDirectory()
        let database = directory + "/currencies.sqlite"
        #expect(try await countersign(["keys", "generate", "--out", directory + "/key"]).status == 0)
        let run = try await countersign(["simulate", "--signing-key", directory + "/key/private-key.pem", "--app", "1108187390", "--days", "3",
                                         "--installs-per-day", "20", "--ad-network", "eur1.skadnetwork=EUR", "--ad-network", "usd1.skadnetwork",
                                         "--database", database, "--claims-out", directory + "/claims.csv"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try String(contentsOfFile: directory + "/claims.csv", encoding: .utf8).split(whereSeparator: \.isNewline).map { $0.split(separator: ",").map(String.init) }
        let header = try #require(lines.first)
        let network = try #require(header.firstIndex(of: "ad_network")), currency = try #require(header.firstIndex(of: "currency"))
        let billed = Dictionary(grouping: lines.dropFirst(), by: { $0[network] }).mapValues { Set($0.map { $0[currency] }) }
        #expect(billed == ["eur1.skadnetwork": ["EUR"], "usd1.skadnetwork": ["USD"]])
        let wrong = try await countersign(["simulate", "--app", "1108187390", "--days", "3", "--ad-network", "eur1.skadnetwork=EURO", "--database", database])
        #expect(wrong.status == 2 && wrong.stderr.contains("EURO is not an ISO 4217 code"))
    }
}
