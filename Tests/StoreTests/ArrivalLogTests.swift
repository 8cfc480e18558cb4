import Foundation
import JWS
import Postback
import PostbackMint
@testable import Store
import Testing
import TestSupport

/// Setup health (issue 26, item 6): every figure of `apps status` equals what this test counts from what it sent,
/// on both engines, with two processes writing at once; what is past its retention is deleted.
@Suite struct ArrivalLogTests {
    static let key = try! ECPrivateKey.generate()
    static let developmentKey = try! ECPrivateKey.generate()
    static let forger = try! ECPrivateKey.generate()
    static let stranger = try! ECPrivateKey.generate()
    static let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "sim/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
        KeyEntry(keyID: "sim-development/0", key: developmentKey.publicKey, environment: .development, usages: [.aak], origin: "test"),
    ]))
    /// The server's rules: two networks accepted, development refused.
    static let policy = TrustPolicy(allowDevelopment: false, acceptedAdNetworks: ["example.adattributionkit", "example123.skadnetwork"])

    /// What one request was, as this test made it.
    enum Kind: CaseIterable { case production, development, otherNetwork, unverifiable, forged, duplicate }

    struct Sent {
        var app: Int64, family: String, version: String, network: String, channel: ArrivalChannel, kind: Kind, at: Date
    }

    /// Requests of every kind, family and channel, for two apps, over the last five days, and one 40 days ago.
    static func traffic(now: Date) throws -> [(Sent, Intake)] {
        var random = SeededGenerator(seed: 6)
        var made: [(Sent, Intake)] = []
        var last: (Sent, [UInt8], PostbackProtocol)?
        for index in 0..<600 {
            var kind = Kind.allCases[Int.random(in: 0..<Kind.allCases.count, using: &random)]
            if kind == .duplicate && last == nil { kind = .production }
            let app: Int64 = [1_108_187_390, 525_463_029][Int.random(in: 0..<2, using: &random)]
            let channel = ArrivalChannel.allCases[Int.random(in: 0..<3, using: &random)]
            let at = index == 0 ? now.addingTimeInterval(-40 * 86_400) : now.addingTimeInterval(-Double(Int.random(in: 0..<432_000, using: &random)))
            let skan = kind == .production && Bool.random(using: &random)
            var sent = Sent(app: app, family: skan ? "skan" : "aak", version: skan ? "4.0" : "", network: skan ? "example123.skadnetwork" : "example.adattributionkit",
                            channel: channel, kind: kind, at: at)
            let body: [UInt8], family: PostbackProtocol
            if kind == .duplicate, let previous = last {
                // The same postback again, through another channel: an arrival of its own.
                body = previous.1
                family = previous.2
                sent = Sent(app: previous.0.app, family: previous.0.family, version: previous.0.version, network: previous.0.network,
                            channel: channel, kind: previous.0.kind, at: at)
            } else if skan {
                var fields = SKANPostbackFields(transactionID: random.uuid().lowercased())
                fields.appID = app
                body = try Mint.skan(fields, key: key)
                family = .skan
            } else {
                var fields = AAKPostbackFields(postbackID: random.uuid())
                fields.advertisedItemID = app
                if kind == .otherNetwork { fields.adNetworkID = "other.adattributionkit"; sent.network = fields.adNetworkID }
                let (signer, keyID): (ECPrivateKey, String) = switch kind {
                case .development: (developmentKey, "sim-development/0")
                case .unverifiable: (stranger, "unknown/1")
                case .forged: (forger, "sim/0")
                default: (key, "sim/0")
                }
                body = try Mint.aak(fields, key: signer, keyID: keyID)
                family = .aak
            }
            let route = sent.channel == .forwarded ? IntakeRoute.any : IntakeRoute(family)
            let result = verifier.verify(body, expecting: family)
            var intake = Intake(receivedAt: at, remoteAddress: nil, route: route, body: body, result: result, decision: policy.decide(result))
            if intake.isRejected { intake.claimed = ClaimedIdentity.read(body) }
            intake.channel = channel
            made.append((sent, intake))
            if kind != .duplicate { last = (sent, body, family) }
        }
        return made
    }

    @Test(arguments: TestEngine.allCases) func theStatusIsWhatWasSent(engine: TestEngine) async throws {
        let database = try engine.freshDatabase()
        let first = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let second = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        defer { first.close(); second.close() }
        try await first.apps.set(AppRegistry.Entry(app: 1_108_187_390, name: "Puzzle", copyDomain: "example.com"))
        try await first.apps.set(AppRegistry.Entry(app: 42, name: "Silent", copyDomain: "quiet.example"))
        let now = Date()
        let traffic = try Self.traffic(now: now)
        // Two processes write batches in turn, as two receivers do.
        for (index, start) in stride(from: 0, to: traffic.count, by: 50).enumerated() {
            _ = try (index % 2 == 0 ? first : second).ledger.persist(traffic[start..<min(start + 50, traffic.count)].map(\.1))
        }
        // What each process holds in memory is written when its writer goes idle or stops; here, now.
        try first.arrivals.flush()
        try second.arrivals.flush()
        #expect(!first.arrivals.hasPending && !second.arrivals.hasPending)

        // The oracle, from what was sent: a forgery and a refused body show no version; development is one column
        // whether stored or refused.
        struct Expected: Equatable { var arrivals = 0, verified = 0, development = 0, unverifiable = 0, invalid = 0, refused = 0, last = "" }
        var expected: [String: Expected] = [:]
        let since = now.addingTimeInterval(-29 * 86_400)
        for (sent, _) in traffic where Timestamp.format(sent.at).prefix(10) >= Timestamp.format(since).prefix(10) {
            let key = [String(sent.app), sent.family, sent.kind == .forged ? "" : sent.version, sent.network, sent.channel.rawValue].joined(separator: "|")
            var entry = expected[key] ?? Expected()
            entry.arrivals += 1
            entry.last = max(entry.last, Timestamp.format(sent.at))
            switch sent.kind {
            case .production, .duplicate: entry.verified += 1
            case .development: entry.development += 1
            case .otherNetwork: entry.refused += 1
            case .unverifiable: entry.unverifiable += 1
            case .forged: entry.invalid += 1
            }
            expected[key] = entry
        }
        let (table, apps) = try await first.setupStatus.report(app: nil, since: since)
        let column = Dictionary(uniqueKeysWithValues: table.columns.enumerated().map { ($1, $0) })
        func text(_ value: JSONValue) -> String {
            switch value {
            case .number(let number): number
            case .string(let string): string
            default: ""
            }
        }
        var found: [String: Expected] = [:]
        for row in table.rows {
            let key = ["app", "protocol", "version", "ad_network", "channel"].map { text(row[column[$0]!]) }.joined(separator: "|")
            found[key] = Expected(arrivals: Int(text(row[column["arrivals"]!]))!, verified: Int(text(row[column["verified"]!]))!,
                                  development: Int(text(row[column["development"]!]))!, unverifiable: Int(text(row[column["unverifiable"]!]))!,
                                  invalid: Int(text(row[column["invalid"]!]))!, refused: Int(text(row[column["refused"]!]))!,
                                  last: text(row[column["last_received_at"]!]))
            let arrivals = Double(found[key]!.arrivals), failing = Double(found[key]!.unverifiable + found[key]!.invalid)
            #expect(text(row[column["failing_share"]!]) == String(format: "%.4f", failing / arrivals), "\(key)")
        }
        #expect(found == expected)
        #expect(expected.values.allSatisfy { $0.arrivals > 0 } && expected.count == 18, "two apps, three networks and protocols, three channels")
        #expect(expected.values.reduce(0) { $0 + $1.arrivals } == traffic.count - 1, "the request of 40 days ago is outside the period")

        // Per app: copies arrive for the app with a copy domain, none for the silent one, not configured for the other.
        // Only copies whose signature Apple's keys checked (counted, development or refused by the rules) say copies
        // arrive; forgeries and unverifiable bodies at the copy domain are counted apart (trust round 4, finding 7).
        let summary = Dictionary(uniqueKeysWithValues: apps.map { ($0.app, $0) })
        let puzzleCopies = traffic.filter { $0.0.app == 1_108_187_390 && $0.0.channel == .developerCopy && $0.0.at >= since }
        let signed = puzzleCopies.filter { [Kind.production, .development, .otherNetwork].contains($0.0.kind) }
        #expect(summary[1_108_187_390]?.developerCopies == .arriving)
        #expect(summary[1_108_187_390]?.lastCopyAt == signed.map { Timestamp.format($0.0.at) }.max())
        #expect(summary[1_108_187_390]?.verifiedCopies == signed.count)
        #expect(summary[1_108_187_390]?.unverifiedCopies == puzzleCopies.count - signed.count)
        #expect(signed.count < puzzleCopies.count, "the traffic has forged and unverifiable bodies at the copy domain")
        #expect(summary[42]?.developerCopies == SetupStatus.DeveloperCopies.none)
        #expect(summary[42]?.arrivals == 0)
        #expect(summary[525_463_029]?.developerCopies == .notConfigured)

        // One app only, and a caller who may see only it.
        let one = try await first.setupStatus.report(app: 525_463_029, since: since)
        #expect(one.table.rows.allSatisfy { text($0[0]) == "525463029" } && !one.table.rows.isEmpty)
        let visible = try await first.setupStatus.report(app: nil, since: since, visible: { $0 == 42 })
        #expect(visible.table.rows.isEmpty)
        #expect(visible.apps.map(\.app) == [42])

        // Retention: with every cutoff in the future nothing is left; the verified rows go last.
        let later = now.addingTimeInterval(86_400)
        _ = try await first.arrivals.prune(rejectedBefore: later, unverifiableBefore: later, verifiedBefore: now.addingTimeInterval(-100 * 86_400), limit: 1000)
        let outcomes = try await first.column("SELECT DISTINCT outcome FROM arrivals_daily", as: String.self)
        #expect(Set(outcomes) == ["verified"])
        _ = try await first.arrivals.prune(rejectedBefore: later, unverifiableBefore: later, verifiedBefore: later, limit: 1000)
        #expect(try await first.scalar("SELECT count(*) FROM arrivals_daily", as: Int.self) == 0)
    }

    /// Security review, finding 7: a `Host` naming the app's copy domain and bodies naming the app are anyone's to send.
    /// Forged and unverifiable bodies at the copy domain never say copies arrive, nor set when the last did; they are
    /// counted apart. One copy Apple's keys verify does, with its own time even when a forgery came later.
    @Test(arguments: TestEngine.allCases) func onlySignatureCheckedCopiesSayCopiesArrive(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let app: AppID = 1_108_187_390
        try await store.apps.set(AppRegistry.Entry(app: app, name: "Puzzle", copyDomain: "example.com"))
        let now = Date()
        /// A body naming the app, signed as `kind` says, received at the copy domain at `at`.
        func copy(_ label: String, _ kind: Kind, at: Date) throws -> Intake {
            var fields = AAKPostbackFields(postbackID: Mint.uuid(label))
            fields.advertisedItemID = app.number
            let (signer, keyID): (ECPrivateKey, String) = switch kind {
            case .unverifiable: (Self.stranger, "unknown/1")
            case .forged: (Self.forger, "sim/0")
            default: (Self.key, "sim/0")
            }
            let body = try Mint.aak(fields, key: signer, keyID: keyID)
            let result = Self.verifier.verify(body, expecting: .aak)
            var intake = Intake(receivedAt: at, remoteAddress: nil, route: IntakeRoute(.aak), body: body, result: result, decision: Self.policy.decide(result))
            if intake.isRejected { intake.claimed = ClaimedIdentity.read(body) }
            intake.channel = .developerCopy
            return intake
        }
        // Three forgeries (a bad signature under a pinned kid) and two bodies under a kid nobody pinned, the last of
        // them a minute ago.
        var junk: [Intake] = []
        for index in 0..<3 { junk.append(try copy("forged-\(index)", .forged, at: now.addingTimeInterval(-Double(60 + index * 60)))) }
        for index in 0..<2 { junk.append(try copy("unverifiable-\(index)", .unverifiable, at: now.addingTimeInterval(-Double(300 + index * 60)))) }
        #expect(junk.filter(\.isRejected).count == 3, "the forgeries are refused, the unverifiable bodies kept")
        _ = try store.ledger.persist(junk)
        try store.arrivals.flush()
        let before = try #require(try await store.setupStatus.report(app: app, since: now.addingTimeInterval(-86_400)).apps.first(where: { $0.app == app }))
        #expect(before.developerCopies == .unverifiedOnly)
        #expect(before.developerCopies != .arriving)
        #expect(before.lastCopyAt == nil)
        #expect(before.verifiedCopies == 0)
        #expect(before.unverifiedCopies == 5)
        #expect(before.arrivals == 5)
        #expect(!before.line.contains("arriving"), "\(before.line)")
        #expect(before.json.object?["developer_copies"] == .string("unverified_only"))
        #expect(before.json.object?["last_copy_at"] == .null)
        #expect(before.json.object?["unverified_copies"] == .number("5"))

        // One copy Apple's key signed, older than the latest forgery: copies arrive, and the last is the signed one.
        let signedAt = now.addingTimeInterval(-30 * 60)
        _ = try store.ledger.persist([try copy("signed", .production, at: signedAt)])
        try store.arrivals.flush()
        let after = try #require(try await store.setupStatus.report(app: app, since: now.addingTimeInterval(-86_400)).apps.first(where: { $0.app == app }))
        #expect(after.developerCopies == .arriving)
        #expect(after.lastCopyAt == Timestamp.format(signedAt))
        #expect(after.verifiedCopies == 1)
        #expect(after.unverifiedCopies == 5)
        #expect(after.json.object?["verified_copies"] == .number("1"))
        #expect(after.line.contains("developer copies arriving at example.com, the last at \(Timestamp.format(signedAt))"), "\(after.line)")
    }
}
