import JWS
import Postback

/// The fields of an AdAttributionKit postback to mint: signed payload members and unsigned outer members.
public struct AAKPostbackFields: Sendable {
    public var postbackID: String
    public var adNetworkID = "example.adattributionkit"
    public var sourceIdentifier = "1234"
    public var advertisedItemID: Int64 = 10738027756
    public var conversionType = "download"
    public var didWin = true
    public var postbackSequenceIndex = 0
    public var publisherItemID: Int64? = 5838492
    public var marketplaceID: String? = "com.apple.AppStore"
    public var impressionType = "app-impression"
    public var conversionValue: Int?
    public var coarseConversionValue: String?
    public var adInteractionType: String? = "click"
    public var countryCode: String?

    /// Fields with defaults that make a valid winning first-window install.
    public init(postbackID: String) { self.postbackID = postbackID }

    /// The JWS payload object.
    public var payload: JSONObject {
        var object = JSONObject()
        object.set("postback-identifier", .string(postbackID))
        if let publisherItemID { object.set("publisher-item-identifier", .number(String(publisherItemID))) }
        if let marketplaceID { object.set("marketplace-identifier", .string(marketplaceID)) }
        object.set("impression-type", .string(impressionType))
        object.set("ad-network-identifier", .string(adNetworkID))
        object.set("did-win", .bool(didWin))
        object.set("postback-sequence-index", .number(String(postbackSequenceIndex)))
        object.set("conversion-type", .string(conversionType))
        object.set("source-identifier", .string(sourceIdentifier))
        object.set("advertised-item-identifier", .number(String(advertisedItemID)))
        return object
    }

    /// The outer members other than `jws-string`.
    public var unsigned: JSONObject {
        var object = JSONObject()
        if let conversionValue { object.set("conversion-value", .number(String(conversionValue))) }
        if let coarseConversionValue { object.set("coarse-conversion-value", .string(coarseConversionValue)) }
        if let adInteractionType { object.set("ad-interaction-type", .string(adInteractionType)) }
        if let countryCode { object.set("country-code", .string(countryCode)) }
        return object
    }
}

/// The fields of a SKAdNetwork postback to mint; only those the version defines are written.
public struct SKANPostbackFields: Sendable {
    public var version: SKANVersion = .v4_0
    public var adNetworkID = "example123.skadnetwork"
    public var campaignID: Int64 = 42
    public var sourceIdentifier = "5239"
    public var appID: Int64 = 525463029
    public var transactionID: String
    public var redownload = false
    public var sourceAppID: Int64?
    public var sourceDomain: String?
    public var fidelityType = 1
    public var didWin = true
    public var postbackSequenceIndex = 0
    public var conversionValue: Int?
    public var coarseConversionValue: String?
    public var countryCode: String?

    /// Fields with defaults that make a valid winning 4.0 postback.
    public init(transactionID: String) { self.transactionID = transactionID }

    /// The postback object without its signature.
    public var object: JSONObject {
        var object = JSONObject()
        if version != .v1_0 { object.set("version", .string(version.rawValue)) }
        object.set("ad-network-id", .string(adNetworkID))
        if version == .v4_0 {
            object.set("source-identifier", .string(sourceIdentifier))
        } else {
            object.set("campaign-id", .number(String(campaignID)))
        }
        object.set("app-id", .number(String(appID)))
        object.set("transaction-id", .string(transactionID))
        if version != .v1_0 { object.set("redownload", .bool(redownload)) }
        if version != .v1_0, let sourceAppID { object.set("source-app-id", .number(String(sourceAppID))) }
        if version == .v4_0, let sourceDomain { object.set("source-domain", .string(sourceDomain)) }
        if [.v2_2, .v3_0, .v4_0].contains(version) { object.set("fidelity-type", .number(String(fidelityType))) }
        if [.v3_0, .v4_0].contains(version) { object.set("did-win", .bool(didWin)) }
        if version == .v4_0 { object.set("postback-sequence-index", .number(String(postbackSequenceIndex))) }
        if let conversionValue { object.set("conversion-value", .number(String(conversionValue))) }
        if let coarseConversionValue { object.set("coarse-conversion-value", .string(coarseConversionValue)) }
        if let countryCode { object.set("country-code", .string(countryCode)) }
        return object
    }
}

/// Mints signed postbacks and impressions with a caller's key: for tests, `simulate`, benchmarks and ad networks.
public enum Mint {
    /// An AAK postback body signed as `keyID`.
    public static func aak(_ fields: AAKPostbackFields, key: ECPrivateKey, keyID: String) throws(KeyError) -> [UInt8] {
        let payload = Array(JSONValue.object(fields.payload).serialized.utf8)
        let jws = try CompactJWS.sign(payload: payload, keyID: keyID, with: key)
        var outer = JSONObject([JSONMember(key: "jws-string", value: .string(jws))])
        outer.members += fields.unsigned.members
        return Array(JSONValue.object(outer).serialized.utf8)
    }

    /// A SKAN postback body signed with `key` (P-192 for 1.0 and 2.0, P-256 otherwise).
    public static func skan(_ fields: SKANPostbackFields, key: ECPrivateKey) throws(KeyError) -> [UInt8] {
        var object = fields.object
        guard case .success(let signed) = PostbackVerifier.skanSignedString(object) else { throw KeyError("cannot compose the signed string") }
        let signature = try key.signDER(message: signed)
        object.set("attribution-signature", .string(Base64.encode(signature, alphabet: .standard)))
        return Array(JSONValue.object(object).serialized.utf8)
    }

    /// A JWS impression as aak.md §9 describes, signed by the ad network (its id is the `kid`).
    public static func impression(
        adNetworkID: String, sourceIdentifier: Int, advertisedItemID: Int64, publisherItemID: Int64?,
        impressionID: String, timestampMilliseconds: Int64, eligibleForReEngagement: Bool, key: ECPrivateKey
    ) throws(KeyError) -> String {
        var payload = JSONObject()
        payload.set("impression-identifier", .string(impressionID))
        if let publisherItemID { payload.set("publisher-item-identifier", .number(String(publisherItemID))) }
        payload.set("impression-type", .string("app-impression"))
        payload.set("ad-network-identifier", .string(adNetworkID))
        payload.set("source-identifier", .number(String(sourceIdentifier)))
        payload.set("timestamp", .number(String(timestampMilliseconds)))
        payload.set("advertised-item-identifier", .number(String(advertisedItemID)))
        if eligibleForReEngagement { payload.set("eligible-for-re-engagement", .bool(true)) }
        return try CompactJWS.sign(payload: Array(JSONValue.object(payload).serialized.utf8), keyID: adNetworkID, with: key)
    }
}

extension Mint {
    /// A UUID-shaped id (upper case, as Apple's AAK examples) derived from `label`, so tests and demos can name
    /// postbacks by label and still send the shape Apple documents.
    public static func uuid(_ label: String) -> String {
        let hex = sha256(Array(label.utf8)).prefix(16).map { byte in
            let digits = Array("0123456789ABCDEF".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
        }.joined()
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }
}
