import JWS

/// One postback, AdAttributionKit or SKAdNetwork, normalised to the same fields.
///
/// Field names follow Apple's where both families agree; the doc comment names each family's JSON key.
/// Only fields Apple signs are trusted; ``conversionValue``, ``coarseConversionValue``,
/// ``adInteractionType`` and ``countryCode`` travel outside the signature.
public struct Postback: Sendable {
    /// AAK or SKAN.
    public var family: PostbackProtocol
    /// SKAN `version` (`1.0` when absent); nil for AAK, which has no version field.
    public var version: String?
    /// AAK `postback-identifier`, SKAN `transaction-id`: Apple's dedup key, kept exactly as received.
    public var postbackID: String
    /// AAK `ad-network-identifier`, SKAN `ad-network-id`.
    public var adNetworkID: String
    /// AAK and SKAN 4 `source-identifier`: 2 to 4 digits.
    public var sourceIdentifier: String?
    /// SKAN 1 to 3 `campaign-id`.
    public var campaignID: Int64?
    /// AAK `advertised-item-identifier`, SKAN `app-id`.
    public var advertisedItemID: Int64
    /// AAK `conversion-type`; for SKAN derived from `redownload`.
    public var conversionType: ConversionType
    /// SKAN 2+ `redownload`.
    public var redownload: Bool?
    /// AAK and SKAN 3+ `did-win`; true for SKAN before 3.0, which sent winning postbacks only.
    public var didWin: Bool
    /// AAK and SKAN 4 `postback-sequence-index` (the conversion window, 0 to 2); 0 before SKAN 4.
    public var postbackSequenceIndex: Int
    /// AAK `publisher-item-identifier`, SKAN `source-app-id`.
    public var publisherItemID: Int64?
    /// SKAN 4 `source-domain` (web ads).
    public var sourceDomain: String?
    /// AAK `marketplace-identifier`.
    public var marketplaceID: String?
    /// AAK `impression-type`.
    public var impressionType: String?
    /// SKAN 2.2+ `fidelity-type`: 0 view-through, 1 StoreKit-rendered or web.
    public var fidelityType: Int?
    /// Unsigned `conversion-value`, 0 to 63.
    public var conversionValue: Int? = nil
    /// Unsigned `coarse-conversion-value`.
    public var coarseConversionValue: CoarseValue? = nil
    /// Unsigned AAK `ad-interaction-type`.
    public var adInteractionType: InteractionType? = nil
    /// Unsigned `country-code`.
    public var countryCode: String? = nil
    /// Every member Apple's signature covers, as decoded (the JWS payload, or SKAN's signed fields).
    public var signedFields: JSONObject
    /// Every member outside the signature (except the signature itself), including ones this version does not know.
    public var unsignedFields: JSONObject

    /// The key postbacks are deduplicated by: `aak:<postback-identifier>` or `skan:<transaction-id>:<window>`.
    public var dedupKey: String {
        switch family {
        case .aak: "aak:" + postbackID
        case .skan: "skan:\(postbackID):\(postbackSequenceIndex)"
        }
    }

    /// Click or view: AAK says so in `ad-interaction-type` (unsigned); SKAN in `fidelity-type` (signed).
    public var interaction: InteractionType? {
        if let adInteractionType { return adInteractionType }
        switch fidelityType {
        case 0: return InteractionType(.view)
        case 1: return InteractionType(.click)
        default: return nil
        }
    }

    /// Which signed value gives the campaign: `source-identifier`, or `campaign-id` before SKAN 4.
    public var sourceDigits: String? {
        if let sourceIdentifier { return sourceIdentifier }
        return campaignID.map(String.init)
    }

    /// The crowd-anonymity tier as far as the fields tell it.
    public var tier: CrowdTier { CrowdTier.infer(from: self) }
}

/// The range of crowd-anonymity tiers (0 to 3) consistent with a postback's fields.
///
/// Apple does not send the tier; it shows in which tier-controlled fields are present.
/// `minimum == maximum` when the fields pin it down.
public struct CrowdTier: Sendable, Equatable, Codable {
    /// The lowest tier the fields allow.
    public let minimum: Int
    /// The highest tier the fields allow.
    public let maximum: Int

    /// Creates a range.
    public init(minimum: Int, maximum: Int) {
        self.minimum = minimum
        self.maximum = maximum
    }

    /// Infers the range from the tier-controlled fields (aak.md §6, skan.md §8).
    ///
    /// SKAdNetwork before 4.0 has a single privacy threshold rather than tiers: a postback with
    /// `source-app-id` or a conversion value passed it (reported as 3), one without may not have (0-3).
    public static func infer(from postback: Postback) -> CrowdTier {
        let hasFine = postback.conversionValue != nil
        let hasCoarse = postback.coarseConversionValue != nil
        let digits = postback.sourceIdentifier?.count ?? 2
        let hasPublisher = postback.publisherItemID != nil || postback.sourceDomain != nil
        if postback.family == .skan, let version = postback.version, !version.hasPrefix("4") {
            return hasPublisher || hasFine ? CrowdTier(minimum: 3, maximum: 3) : CrowdTier(minimum: 0, maximum: 3)
        }
        if postback.postbackSequenceIndex > 0 {
            // Later windows exist only at tiers 1 to 3 and always carry 2 digits and coarse values.
            return CrowdTier(minimum: 1, maximum: 3)
        }
        if hasPublisher || postback.countryCode != nil { return CrowdTier(minimum: 3, maximum: 3) }
        if hasFine || digits > 2 { return CrowdTier(minimum: 2, maximum: postback.didWin ? 2 : 3) }
        if hasCoarse { return CrowdTier(minimum: 1, maximum: 1) }
        if postback.family == .aak, postback.marketplaceID == nil { return CrowdTier(minimum: 0, maximum: 0) }
        // No value at all: tier 0, or a higher tier whose app never set a value.
        return CrowdTier(minimum: 0, maximum: 3)
    }
}
