import JWS

/// SKAdNetwork versions whose signed-field order is known (skan.md §4).
public enum SKANVersion: String, Sendable, CaseIterable {
    case v1_0 = "1.0"
    case v2_0 = "2.0"
    case v2_1 = "2.1"
    case v2_2 = "2.2"
    case v3_0 = "3.0"
    case v4_0 = "4.0"

    /// P-192 for 1.0 and 2.0, P-256 from 2.1 on.
    public var curve: Curve {
        switch self {
        case .v1_0, .v2_0: .p192
        default: .p256
        }
    }

    /// The signed fields in order; `nil` entries mark the optional publisher slot.
    var signedOrder: [SignedSlot] {
        switch self {
        case .v1_0: [.field("ad-network-id"), .field("campaign-id"), .field("app-id"), .field("transaction-id")]
        case .v2_0, .v2_1: Self.legacyPrefix
        case .v2_2: Self.legacyPrefix + [.field("fidelity-type")]
        case .v3_0: Self.legacyPrefix + [.field("fidelity-type"), .field("did-win")]
        case .v4_0:
            [.field("version"), .field("ad-network-id"), .field("source-identifier"), .field("app-id"), .field("transaction-id"),
             .field("redownload"), .optional(["source-app-id", "source-domain"]), .field("fidelity-type"), .field("did-win"),
             .field("postback-sequence-index")]
        }
    }

    private static let legacyPrefix: [SignedSlot] = [
        .field("version"), .field("ad-network-id"), .field("campaign-id"), .field("app-id"), .field("transaction-id"),
        .field("redownload"), .optional(["source-app-id"]),
    ]
}

/// One position in a SKAdNetwork signed string.
enum SignedSlot {
    /// A required field.
    case field(String)
    /// At most one of these fields; when none is present the slot and its separator are left out.
    case optional([String])
}

/// SKAdNetwork postbacks: decoding and the signed string per version.
enum SKANPostback {
    /// U+2063 INVISIBLE SEPARATOR in UTF-8.
    static let separator: [UInt8] = [0xE2, 0x81, 0xA3]

    static let stringFields: Set<String> = ["version", "ad-network-id", "source-identifier", "transaction-id", "source-domain"]
    static let booleanFields: Set<String> = ["redownload", "did-win"]

    /// The version a body declares: `version`, or 1.0 when it has none.
    static func declaredVersion(_ object: JSONObject) throws(FieldProblem) -> String {
        try FieldReader(object: object).optionalString("version") ?? SKANVersion.v1_0.rawValue
    }

    /// The bytes Apple signed, and the names of the fields in them.
    static func signedString(_ object: JSONObject, version: SKANVersion) throws(FieldProblem) -> (bytes: [UInt8], fields: [String]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160)
        var fields: [String] = []
        for slot in version.signedOrder {
            let key: String
            switch slot {
            case .field(let name):
                key = name
            case .optional(let names):
                let present = names.filter { object[$0] != nil && object[$0] != .null }
                if present.count > 1 {
                    throw FieldProblem(.conflictingFields, field: present[1], "\(present.joined(separator: " and ")) exclude each other")
                }
                guard let name = present.first else { continue }
                key = name
            }
            if !fields.isEmpty { bytes += separator }
            bytes += try component(object, key)
            fields.append(key)
        }
        return (bytes, fields)
    }

    /// One field as it appears in the signed string: strings verbatim, integers in decimal, Booleans as words.
    ///
    /// Each field must have its documented shape first. None can hold the U+2063 separator, so the signed string
    /// splits into fields one way only, and one Apple signature can never be read as two postbacks.
    private static func component(_ object: JSONObject, _ key: String) throws(FieldProblem) -> [UInt8] {
        let reader = FieldReader(object: object)
        if stringFields.contains(key) {
            let text = try reader.string(key)
            switch key {
            case "ad-network-id": try FieldRules.adNetworkID(text, field: key)
            case "source-identifier": try FieldRules.sourceIdentifier(text, field: key)
            case "transaction-id": try FieldRules.uuid(text, field: key)
            case "source-domain": try FieldRules.domainName(text, field: key)
            default: try FieldRules.printable(text, field: key)
            }
            return Array(text.utf8)
        }
        if booleanFields.contains(key) { return Array((try reader.bool(key) ? "true" : "false").utf8) }
        let number = try reader.identifier(key)
        switch key {
        case "fidelity-type":
            guard number <= 1 else { throw FieldProblem(.fieldOutOfRange, field: key, "fidelity-type must be 0 or 1, got \(number)") }
        case "postback-sequence-index":
            try FieldRules.sequenceIndex(number, field: key)
        default: break
        }
        return Array(String(number).utf8)
    }

    /// Decodes a postback whose version is known, checking every range.
    static func decode(_ object: JSONObject, version: SKANVersion, signedFieldNames: [String]) throws(FieldProblem) -> Postback {
        let reader = FieldReader(object: object)
        let signedNames = Set(signedFieldNames)
        var signed = JSONObject()
        var unsigned = JSONObject()
        for member in object.members where member.key != "attribution-signature" {
            if signedNames.contains(member.key) { signed.members.append(member) } else { unsigned.members.append(member) }
        }
        // Typed values come only from signed members: a field this version does not sign is not trusted.
        let signedReader = FieldReader(object: signed)
        var sourceIdentifier: String?
        var campaignID: Int64?
        if version == .v4_0 {
            sourceIdentifier = try signedReader.string("source-identifier")
        } else {
            campaignID = try signedReader.identifier("campaign-id")
        }
        var sequenceIndex: Int64 = 0
        if version == .v4_0 {
            sequenceIndex = try signedReader.int64("postback-sequence-index")
        }
        let redownload = try signedReader.optionalBool("redownload")
        let transactionID = try signedReader.string("transaction-id")
        var postback = Postback(
            family: .skan,
            version: version.rawValue,
            postbackID: transactionID,
            adNetworkID: try signedReader.string("ad-network-id"),
            sourceIdentifier: sourceIdentifier,
            campaignID: campaignID,
            advertisedItemID: try signedReader.identifier("app-id"),
            conversionType: ConversionType(redownload == true ? .redownload : .download),
            redownload: redownload,
            didWin: try signedReader.optionalBool("did-win") ?? true,
            postbackSequenceIndex: Int(sequenceIndex),
            publisherItemID: try signedReader.optionalIdentifier("source-app-id"),
            sourceDomain: try signedReader.optionalString("source-domain"),
            marketplaceID: nil,
            impressionType: nil,
            fidelityType: try signedReader.optionalInt64("fidelity-type").map { Int($0) },
            signedFields: signed,
            unsignedFields: unsigned
        )
        try FieldRules.unsignedValues(reader, into: &postback)
        if postback.coarseConversionValue != nil, version != .v4_0 {
            throw FieldProblem(.fieldOutOfRange, field: "coarse-conversion-value", "coarse-conversion-value exists from SKAdNetwork 4.0 on")
        }
        return postback
    }

    /// Best-effort decoding of a version whose field order is unknown, so it can be stored and re-checked later.
    ///
    /// Nothing in it is signed as far as Countersign knows, so it is bounded rather than trusted: the version must look
    /// like one, and every text that reaches a column is short printable text without the separator.
    static func decodeUnknownVersion(_ object: JSONObject, version: String) throws(FieldProblem) -> Postback {
        guard looksLikeVersion(version) else {
            throw FieldProblem(.fieldOutOfRange, field: "version", "version must be a version number such as 4.0, got \(FieldRules.quoted(version))")
        }
        let reader = FieldReader(object: object)
        let transactionID = try reader.string("transaction-id")
        try FieldRules.printable(transactionID, field: "transaction-id")
        let adNetworkID = try reader.string("ad-network-id")
        try FieldRules.adNetworkID(adNetworkID, field: "ad-network-id")
        func text(_ key: String) -> String? {
            guard let value = (try? reader.optionalString(key)) ?? nil, (try? FieldRules.printable(value, field: key)) != nil else { return nil }
            return value
        }
        let sequenceIndex = (try? reader.optionalInt64("postback-sequence-index")) ?? nil
        var unsigned = JSONObject()
        for member in object.members where member.key != "attribution-signature" { unsigned.members.append(member) }
        let redownload = (try? reader.optionalBool("redownload")) ?? nil
        return Postback(
            family: .skan,
            version: version,
            postbackID: transactionID,
            adNetworkID: adNetworkID,
            sourceIdentifier: text("source-identifier").flatMap { (try? FieldRules.sourceIdentifier($0, field: "source-identifier")) != nil ? $0 : nil },
            campaignID: (try? reader.optionalIdentifier("campaign-id")) ?? nil,
            advertisedItemID: ((try? reader.optionalIdentifier("app-id")) ?? nil) ?? 0,
            conversionType: ConversionType(redownload == true ? .redownload : .download),
            redownload: redownload,
            didWin: ((try? reader.optionalBool("did-win")) ?? nil) ?? true,
            postbackSequenceIndex: Int(sequenceIndex.map { min(max($0, 0), 2) } ?? 0),
            publisherItemID: (try? reader.optionalIdentifier("source-app-id")) ?? nil,
            sourceDomain: text("source-domain"),
            marketplaceID: nil,
            impressionType: nil,
            fidelityType: ((try? reader.optionalInt64("fidelity-type")) ?? nil).map { Int(min(max($0, 0), 1)) },
            signedFields: JSONObject(),
            unsignedFields: unsigned
        )
    }

    /// One to three dot-separated numbers of at most three digits (`4.0`, `5.1.2`).
    static func looksLikeVersion(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return (1...3).contains(parts.count) && parts.allSatisfy { part in
            (1...3).contains(part.count) && part.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
    }
}
