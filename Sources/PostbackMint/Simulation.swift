import JWS
import Postback

/// A small, fast, seedable generator (SplitMix64), so a simulation can be repeated exactly.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Starts from `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A UUID-shaped string (upper case, as Apple's examples show).
    public mutating func uuid() -> String {
        let hex = Array("0123456789ABCDEF")
        var characters: [Character] = []
        for index in 0..<32 {
            if [8, 12, 16, 20].contains(index) { characters.append("-") }
            characters.append(hex[Int(next() & 15)])
        }
        return String(characters)
    }
}

/// One simulated request: what is sent, and what the sender knows about it.
public struct SimulatedPostback: Sendable {
    /// First copy, an identical repeat, or a repeat with different unsigned fields.
    public enum Kind: String, Sendable { case original, duplicate, replay }

    /// Which family, and so which well-known route.
    public let family: PostbackProtocol
    /// The request body.
    public let body: [UInt8]
    /// Original, duplicate or replay.
    public let kind: Kind
    /// The dedup key the receiver should derive.
    public let dedupKey: String
}

/// Realistic postback traffic: both families, every conversion type, windows, tiers, winners and losers,
/// plus a share of duplicates and replays.
public struct Simulation {
    /// Apps the simulated campaigns advertise.
    public static let advertisedApps: [Int64] = [1_108_187_390, 525_463_029, 10_738_027_756]

    private var random: SeededGenerator
    private let key: ECPrivateKey
    private let keyID: String
    private var originals: [(fields: Either, family: PostbackProtocol)] = []

    private enum Either {
        case aak(AAKPostbackFields), skan(SKANPostbackFields)

        var family: PostbackProtocol {
            switch self {
            case .aak: .aak
            case .skan: .skan
            }
        }
    }

    private let repeats: Bool
    /// The apps advertised, each postback naming one.
    private let apps: [Int64]

    /// Prepares a simulation signing with `key`; AAK postbacks carry `keyID`. With `repeats` false every
    /// request is a distinct original (for load tests); otherwise about 5% are duplicates and 3% replays. The
    /// postbacks name `apps` (``advertisedApps`` unless given).
    public init(seed: UInt64, key: ECPrivateKey, keyID: String, repeats: Bool = true, apps: [Int64] = advertisedApps) {
        random = SeededGenerator(seed: seed)
        self.key = key
        self.keyID = keyID
        self.repeats = repeats
        self.apps = apps.isEmpty ? Self.advertisedApps : apps
    }

    /// The next request.
    public mutating func next() throws(KeyError) -> SimulatedPostback {
        let roll = Int.random(in: 0..<100, using: &random)
        if repeats, !originals.isEmpty, roll < 8 {
            let earlier = originals[Int.random(in: 0..<originals.count, using: &random)]
            if roll < 5 { return try sign(earlier.fields, kind: .duplicate) }
            return try sign(changeUnsigned(earlier.fields), kind: .replay)
        }
        let fields: Either = Int.random(in: 0..<10, using: &random) < 6 ? .aak(makeAAK()) : .skan(makeSKAN())
        originals.append((fields, fields.family))
        if originals.count > 4096 { originals.removeFirst(1024) }
        return try sign(fields, kind: .original)
    }

    private func sign(_ fields: Either, kind: SimulatedPostback.Kind) throws(KeyError) -> SimulatedPostback {
        switch fields {
        case .aak(let aak):
            return SimulatedPostback(family: .aak, body: try Mint.aak(aak, key: key, keyID: keyID), kind: kind, dedupKey: "aak:" + aak.postbackID)
        case .skan(let skan):
            return SimulatedPostback(family: .skan, body: try Mint.skan(skan, key: key), kind: kind,
                                     dedupKey: "skan:\(skan.transactionID):\(skan.version == .v4_0 ? skan.postbackSequenceIndex : 0)")
        }
    }

    private mutating func changeUnsigned(_ fields: Either) -> Either {
        switch fields {
        case .aak(var aak):
            aak.countryCode = aak.countryCode == "US" ? "GB" : "US"
            return .aak(aak)
        case .skan(var skan):
            skan.countryCode = skan.countryCode == "US" ? "GB" : "US"
            return .skan(skan)
        }
    }

    private mutating func window() -> Int {
        let roll = Int.random(in: 0..<100, using: &random)
        return roll < 60 ? 0 : roll < 85 ? 1 : 2
    }

    private mutating func digits(count: Int) -> String {
        let campaign = 10 + Int.random(in: 0..<12, using: &random)
        let adGroup = Int.random(in: 1...3, using: &random)
        let creative = Int.random(in: 1...4, using: &random)
        return String(String(campaign) + String(adGroup) + String(creative)).prefix(count).description
    }

    private mutating func makeAAK() -> AAKPostbackFields {
        var fields = AAKPostbackFields(postbackID: random.uuid())
        fields.advertisedItemID = apps[Int.random(in: 0..<apps.count, using: &random)]
        let typeRoll = Int.random(in: 0..<100, using: &random)
        fields.conversionType = typeRoll < 70 ? "download" : typeRoll < 85 ? "redownload" : "re-engagement"
        fields.adInteractionType = fields.conversionType == "re-engagement" || Bool.random(using: &random) ? "click" : "view"
        fields.postbackSequenceIndex = window()
        fields.didWin = fields.conversionType == "re-engagement" || fields.postbackSequenceIndex > 0 || Int.random(in: 0..<100, using: &random) < 85
        fields.publisherItemID = nil
        fields.countryCode = nil
        if !fields.didWin {
            fields.sourceIdentifier = digits(count: 2 + Int.random(in: 0...2, using: &random))
            return fields
        }
        if fields.postbackSequenceIndex > 0 {
            fields.sourceIdentifier = digits(count: 2)
            fields.coarseConversionValue = ["low", "medium", "high", nil][Int.random(in: 0..<4, using: &random)]
            return fields
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 3:
            fields.sourceIdentifier = digits(count: 4)
            fields.conversionValue = Int.random(in: 0...63, using: &random)
            fields.publisherItemID = 5_838_492
            fields.countryCode = ["US", "GB", "DE", "JP"][Int.random(in: 0..<4, using: &random)]
        case 2:
            fields.sourceIdentifier = digits(count: 3 + Int.random(in: 0...1, using: &random))
            fields.conversionValue = Int.random(in: 0...63, using: &random)
        case 1:
            fields.sourceIdentifier = digits(count: 2)
            fields.coarseConversionValue = ["low", "medium", "high"][Int.random(in: 0..<3, using: &random)]
        default:
            fields.sourceIdentifier = digits(count: 2)
            fields.marketplaceID = nil
        }
        return fields
    }

    private mutating func makeSKAN() -> SKANPostbackFields {
        var fields = SKANPostbackFields(transactionID: random.uuid().lowercased())
        fields.version = Int.random(in: 0..<10, using: &random) < 8 ? .v4_0 : .v3_0
        fields.adNetworkID = "example.skadnetwork"
        fields.appID = apps[Int.random(in: 0..<apps.count, using: &random)]
        fields.redownload = Int.random(in: 0..<100, using: &random) < 15
        fields.fidelityType = Bool.random(using: &random) ? 1 : 0
        fields.didWin = Int.random(in: 0..<100, using: &random) < 85
        fields.campaignID = Int64(10 + Int.random(in: 0..<12, using: &random))
        if fields.version == .v3_0 {
            if fields.didWin, Bool.random(using: &random) {
                fields.sourceAppID = 1_234_567_891
                fields.conversionValue = Int.random(in: 0...63, using: &random)
            }
            return fields
        }
        fields.postbackSequenceIndex = fields.didWin ? window() : 0
        if !fields.didWin || fields.postbackSequenceIndex > 0 {
            fields.sourceIdentifier = digits(count: 2)
            if fields.didWin { fields.coarseConversionValue = ["low", "medium", "high", nil][Int.random(in: 0..<4, using: &random)] }
            return fields
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 3:
            fields.sourceIdentifier = digits(count: 4)
            fields.conversionValue = Int.random(in: 0...63, using: &random)
            if Bool.random(using: &random) { fields.sourceAppID = 1_234_567_891 } else { fields.sourceDomain = "example.com" }
            fields.countryCode = ["US", "GB", "DE", "JP"][Int.random(in: 0..<4, using: &random)]
        case 2:
            fields.sourceIdentifier = digits(count: 3)
            fields.conversionValue = Int.random(in: 0...63, using: &random)
        case 1:
            fields.sourceIdentifier = digits(count: 2)
            fields.coarseConversionValue = ["low", "medium", "high"][Int.random(in: 0..<3, using: &random)]
        default:
            fields.sourceIdentifier = digits(count: 2)
        }
        return fields
    }
}
