import Foundation
import JWS
import Postback

/// A trial of Countersign with one's own apps: installs spread over a period, each sending its postbacks when Apple's
/// timers would (docs/metrics.md), with the values, tiers, non-winning postbacks, re-engagements, duplicates, replays,
/// forgeries and unverifiable postbacks real traffic has; and the claims and spend file a network would send for it,
/// over-claiming by a known share. Everything is kept in a ledger, so a test can check reports against it.
public struct TrialPlan: Sendable {
    /// The advertised apps (App Store ids).
    public var apps: [Int64]
    /// The ad networks buying installs: each one's id, the currency it bills in, its cost per install in millionths, and
    /// the share of installs it over-claims in its report (0.1 claims 10% more than it drove).
    public var networks: [TrialNetwork]
    /// Campaign digits (two each); source identifiers add an ad group and a creative digit.
    public var campaigns: [String]
    /// Countries installs come from (Apple reveals one only at tier 3).
    public var countries: [String]
    /// The first day of installs (UTC midnight) and how many days.
    public var start: Date
    public var days: Int
    /// Installs a day, across apps and networks.
    public var installsPerDay: Int
    /// Postbacks due after this moment are not sent yet: the last installs' later windows are still to come.
    public var now: Date
    public var seed: UInt64
    /// The kind of app, whose revenue curve installs follow where ``worth`` knows the app's values.
    public var genre: TrialGenre = .casualGame
    /// Each app's values and what its schema says they are worth. An app without one gets values at random, skewed low.
    public var worth: [Int64: TrialValueWorth] = [:]

    /// A plan with the defaults a quick start uses: two networks (one billing in EUR), three campaigns, four countries.
    public init(apps: [Int64], start: Date, days: Int, installsPerDay: Int = 40, now: Date = Date(), seed: UInt64 = 1,
                networks: [TrialNetwork] = TrialNetwork.defaults, campaigns: [String] = ["10", "11", "12"], countries: [String] = ["US", "DE", "GB", "JP"]) {
        self.apps = apps
        self.start = start
        self.days = days
        self.installsPerDay = installsPerDay
        self.now = now
        self.seed = seed
        self.networks = networks
        self.campaigns = campaigns
        self.countries = countries
    }
}

/// One network of a trial.
public struct TrialNetwork: Sendable, Equatable {
    public var id: String
    public var currency: String
    public var costPerInstallMicros: Int64
    public var overClaim: Double

    /// A network.
    public init(id: String, currency: String, costPerInstallMicros: Int64, overClaim: Double) {
        self.id = id
        self.currency = currency
        self.costPerInstallMicros = costPerInstallMicros
        self.overClaim = overClaim
    }

    /// Networks buying installs of `genre` at its cost per install, each at its own premium or discount (10% above,
    /// 10% below, 25% above, in turn), billing in `currencies` in turn; the first claims 10% more installs than it drove.
    public static func buying(_ genre: TrialGenre, ids: [String], currencies: [String]) -> [TrialNetwork] {
        ids.enumerated().map { index, id in
            let cost = Int64((Double(genre.costPerInstallMicros) * [1.1, 0.9, 1.25][index % 3] / 10_000).rounded()) * 10_000
            return TrialNetwork(id: id, currency: currencies[index % currencies.count], costPerInstallMicros: cost, overClaim: index == 0 ? 0.10 : 0)
        }
    }

    /// Two networks: one in US dollars that claims 10% more installs than it drove, one in euros that claims exactly.
    public static let defaults = [
        TrialNetwork(id: "example123.skadnetwork", currency: "USD", costPerInstallMicros: 4_800_000, overClaim: 0.10),
        TrialNetwork(id: "example.adattributionkit", currency: "EUR", costPerInstallMicros: 3_900_000, overClaim: 0),
    ]
}

/// What a trial sent: every postback with when it arrives and what it is, and every install.
public struct TrialLedger: Sendable {
    /// One request, due at `arrival`.
    public struct Sent: Sendable {
        public enum Kind: String, Sendable {
            /// Apple-signed, first copy.
            case original
            /// The same body again.
            case duplicate
            /// The same postback with a changed unsigned value.
            case replay
            /// Signed with a key that is not Apple's under Apple's key id: refused as forged.
            case forged
            /// Under a key id nobody pinned: kept, never counted.
            case unverifiable
            /// A copy signed with a development key: stored, never counted as production.
            case development
        }

        public let arrival: Date
        public let family: PostbackProtocol
        public let body: [UInt8]
        public let kind: Kind
        public let dedupKey: String
        /// The install it reports (an index into ``TrialLedger/installs``).
        public let install: Int
    }

    /// One install (or re-engagement) and what the network knows of it.
    public struct Install: Sendable {
        public let time: Date
        public let app: Int64
        public let network: String
        public let campaign: String
        public let country: String
        public let reEngagement: Bool
        /// What the user spent within windows 0, 1 and 2, by the genre's curve; empty when the app's values were drawn
        /// without a schema to follow.
        public let spent: [Double]
    }

    public var sent: [Sent] = []
    public var installs: [Install] = []

    /// The network's report for the trial's installs: per day, app, network and campaign, the impressions, clicks, the
    /// installs and re-engagements it claims (its over-claim added) and what it charged, in the generic layout
    /// (docs/spend.md).
    public func claimsCSV(_ plan: TrialPlan) -> String {
        var rows: [String: (installs: Int, reEngagements: Int)] = [:]
        for install in installs {
            let key = "\(Timestamp.format(install.time).prefix(10)),\(install.app),\(install.network),\(install.campaign)"
            if install.reEngagement { rows[key, default: (0, 0)].reEngagements += 1 } else { rows[key, default: (0, 0)].installs += 1 }
        }
        var text = "date,app,ad_network,campaign,impressions,clicks,installs,re_engagements,spend,currency\n"
        // The over-claim is spread over the rows so that each network's total is its share more, rounded once.
        var driven: [String: Int] = [:], claimedSoFar: [String: Int] = [:]
        for (key, counts) in rows.sorted(by: { $0.key < $1.key }) {
            let network = plan.networks.first { key.contains(",\($0.id),") }!
            driven[network.id, default: 0] += counts.installs
            let total = Int((Double(driven[network.id]!) * (1 + network.overClaim)).rounded())
            let claimed = total - claimedSoFar[network.id, default: 0]
            claimedSoFar[network.id] = total
            let spend = Int64(counts.installs + counts.reEngagements) * network.costPerInstallMicros
            text += "\(key),\((counts.installs + counts.reEngagements) * 40),\((counts.installs + counts.reEngagements) * 3),\(claimed),\(counts.reEngagements),"
                + "\(spend / 1_000_000).\(String(format: "%06lld", spend % 1_000_000)),\(network.currency)\n"
        }
        return text
    }
}

/// Generates a trial.
public enum Trial {
    /// The trial `plan` describes, signed with `key` as `keyID` (AdAttributionKit; SKAdNetwork needs no key id),
    /// forgeries signed with `forger` under the same key id, development copies with `development` (a key the ring
    /// holds as a development key) when given.
    public static func generate(_ plan: TrialPlan, key: ECPrivateKey, keyID: String, forger: ECPrivateKey,
                                development: (key: ECPrivateKey, keyID: String)? = nil) throws(KeyError) -> TrialLedger {
        var random = SeededGenerator(seed: plan.seed)
        var ledger = TrialLedger()
        func roll(_ below: Int) -> Int { Int.random(in: 0..<below, using: &random) }
        func hours(_ low: Double, _ high: Double) -> TimeInterval { (low + (high - low) * Double(roll(10_000)) / 10_000) * 3600 }
        for day in 0..<plan.days {
            for _ in 0..<plan.installsPerDay {
                let time = plan.start.addingTimeInterval(Double(day) * 86_400 + Double(roll(86_400)))
                let network = plan.networks[roll(plan.networks.count)]
                let app = plan.apps[roll(plan.apps.count)]
                let campaign = plan.campaigns[roll(plan.campaigns.count)]
                let country = plan.countries[roll(plan.countries.count)]
                // Tiers as a growing app sees them: most installs at 1 and 2, some at 0 and 3.
                let tier = [0, 1, 1, 2, 2, 2, 3, 3][roll(8)]
                let family: PostbackProtocol = roll(10) < 5 ? .aak : .skan
                let legacy = family == .skan && roll(10) == 0
                let reEngagement = family == .aak && roll(10) == 0
                let index = ledger.installs.count
                let source = campaign + String(1 + roll(3)) + String(1 + roll(4))
                let digits = tier >= 3 ? source : tier == 2 ? String(source.prefix(3)) : campaign
                // A later window has a postback only when the user came back in it (60% and 40% do).
                let windows = legacy ? [0] : [0] + (roll(10) < 6 ? [1] : []) + (roll(10) < 4 ? [2] : [])
                // Users spend only in windows they came back in, so those who do spend the curve's share of the rest.
                let worth = plan.worth[app], spent = worth == nil ? [] : (0...2).map { window in
                    windows.contains(window) ? plan.genre.spend(window: window, activeShare: [1, 0.6, 0.4][window], using: &random) : 0
                }
                ledger.installs.append(.init(time: time, app: app, network: network.id, campaign: campaign, country: country, reEngagement: reEngagement, spent: spent))
                let identifier = random.uuid()
                for window in windows {
                    // Apple's timers: the window ends (48 h, 7 days, 35 days after first launch), then 24-48 h or
                    // 24-144 h pass; SKAdNetwork before 4.0 sends 24-48 h after the last update.
                    let delay = legacy ? hours(24, 48) : [48.0, 168, 840][window] * 3600 + (window == 0 ? hours(24, 48) : hours(24, 144))
                    let arrival = time.addingTimeInterval(delay)
                    guard arrival <= plan.now else { continue }
                    var fine: Int?, coarse: String?
                    // With a schema to follow, the value that holds what the install spent in this window.
                    if window == 0, tier >= 2, roll(10) < 9 {
                        if let worth { fine = TrialValueWorth.pick(worth.fine[window], amount: spent[window], using: &random) } else {
                            // Most users do little: low values far more often than high ones, as in a real app.
                            fine = Int(pow(Double(roll(10_000)) / 10_000, 3) * 64)
                        }
                    } else if tier >= 1, roll(10) < 8 {
                        if let worth { coarse = TrialValueWorth.pick(worth.coarse[window], amount: spent[window], using: &random) } else {
                            coarse = ["low", "low", "low", "low", "low", "low", "medium", "medium", "medium", "high"][roll(10)]
                        }
                    }
                    let body: [UInt8], dedup: String
                    switch family {
                    case .aak:
                        var fields = AAKPostbackFields(postbackID: window == 0 ? identifier : random.uuid())
                        fields.adNetworkID = network.id
                        fields.advertisedItemID = app
                        fields.sourceIdentifier = window == 0 ? digits : campaign
                        fields.conversionType = reEngagement ? "re-engagement" : (roll(10) == 0 ? "redownload" : "download")
                        fields.postbackSequenceIndex = window
                        fields.conversionValue = fine
                        fields.coarseConversionValue = coarse
                        fields.countryCode = tier == 3 ? country : nil
                        fields.publisherItemID = tier >= 3 ? 5_838_492 : nil
                        body = try Mint.aak(fields, key: key, keyID: keyID)
                        dedup = "aak:" + fields.postbackID
                    case .skan:
                        var fields = SKANPostbackFields(transactionID: identifier.lowercased())
                        fields.version = legacy ? .v3_0 : .v4_0
                        fields.adNetworkID = network.id
                        fields.appID = app
                        fields.campaignID = Int64(campaign)!
                        fields.sourceIdentifier = window == 0 ? digits : campaign
                        fields.postbackSequenceIndex = window
                        fields.conversionValue = legacy ? (tier >= 2 ? fine ?? worth.flatMap { TrialValueWorth.pick($0.fine[0], amount: spent[0], using: &random) } ?? roll(64) : nil) : fine
                        fields.coarseConversionValue = legacy ? nil : coarse
                        fields.countryCode = tier == 3 && !legacy ? country : nil
                        fields.sourceAppID = tier >= 3 || (legacy && tier >= 2) ? 1_234_567_891 : nil
                        body = try Mint.skan(fields, key: key)
                        dedup = "skan:\(fields.transactionID):\(legacy ? 0 : window)"
                    }
                    ledger.sent.append(.init(arrival: arrival, family: family, body: body, kind: .original, dedupKey: dedup, install: index))
                }
                // Another network saw an ad too: its non-winning postback (window 0, no value).
                if family == .skan, !legacy, roll(10) < 2, let other = plan.networks.first(where: { $0.id != network.id }) {
                    var fields = SKANPostbackFields(transactionID: random.uuid().lowercased())
                    fields.adNetworkID = other.id
                    fields.appID = app
                    fields.sourceIdentifier = campaign
                    fields.didWin = false
                    let arrival = time.addingTimeInterval(48 * 3600 + hours(24, 48))
                    if arrival <= plan.now {
                        ledger.sent.append(.init(arrival: arrival, family: .skan, body: try Mint.skan(fields, key: key),
                                                 kind: .original, dedupKey: "skan:\(fields.transactionID):0", install: index))
                    }
                }
            }
        }
        // Copies and fakes among the originals: 3% duplicates, 2% replays (a changed value), 1% forged, 1% unverifiable,
        // 1% development (with a development key).
        let originals = ledger.sent
        for original in originals {
            let draw = roll(100)
            guard draw < 7 || (draw == 7 && development != nil) else { continue }
            let later = original.arrival.addingTimeInterval(hours(0, 12))
            guard later <= plan.now else { continue }
            switch draw {
            case 0..<3:
                ledger.sent.append(.init(arrival: later, family: original.family, body: original.body, kind: .duplicate, dedupKey: original.dedupKey, install: original.install))
            case 3..<5:
                var object = try! JSONParser.parse(original.body).object!
                object.set("country-code", .string(object["country-code"]?.string == "FR" ? "IT" : "FR"))
                ledger.sent.append(.init(arrival: later, family: original.family, body: Array(JSONValue.object(object).serialized.utf8), kind: .replay,
                                         dedupKey: original.dedupKey, install: original.install))
            default:
                guard original.family == .aak, let fields = try? reFields(original.body) else { continue }
                var copy = fields
                copy.postbackID = random.uuid()
                let (signer, signerID, kind): (ECPrivateKey, String, TrialLedger.Sent.Kind) = switch draw {
                case 5: (forger, keyID, .forged)
                case 6: (key, "unknown-key/9", .unverifiable)
                default: (development!.key, development!.keyID, .development)
                }
                let body = try Mint.aak(copy, key: signer, keyID: signerID)
                ledger.sent.append(.init(arrival: later, family: .aak, body: body, kind: kind, dedupKey: "aak:" + copy.postbackID, install: original.install))
            }
        }
        ledger.sent.sort { $0.arrival < $1.arrival }
        return ledger
    }

    /// The fields of an AdAttributionKit body minted here, read back from its JWS payload.
    private static func reFields(_ body: [UInt8]) throws -> AAKPostbackFields {
        let outer = try JSONParser.parse(body).object!
        let jws = outer["jws-string"]!.string!
        let payload = try JSONParser.parse(Base64.decode(Array(jws.split(separator: ".")[1].utf8), alphabet: .url)!).object!
        var fields = AAKPostbackFields(postbackID: payload["postback-identifier"]!.string!)
        fields.adNetworkID = payload["ad-network-identifier"]!.string!
        fields.advertisedItemID = payload["advertised-item-identifier"]!.int64!
        fields.sourceIdentifier = payload["source-identifier"]!.string!
        fields.conversionType = payload["conversion-type"]!.string!
        fields.postbackSequenceIndex = Int(payload["postback-sequence-index"]!.int64!)
        fields.conversionValue = outer["conversion-value"]?.int64.map { Int($0) }
        fields.coarseConversionValue = outer["coarse-conversion-value"]?.string
        return fields
    }
}
