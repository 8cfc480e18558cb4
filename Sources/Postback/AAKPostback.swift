import JWS

/// AdAttributionKit postbacks: the outer JSON and the JWS payload (aak.md §2 and §4).
enum AAKPostback {
    /// Decodes the JWS payload and the outer unsigned fields into a postback and checks every range.
    static func decode(payload: [UInt8], outer: JSONObject) throws(FieldProblem) -> Postback {
        guard let payloadValue = try? JSONParser.parse(payload, keys: PostbackKeys.table, limits: .publicBody), let signed = payloadValue.object else {
            throw FieldProblem(.malformedJSON, field: "jws-string", "the JWS payload is not a JSON object")
        }
        let reader = FieldReader(object: signed)
        let sourceIdentifier: String
        if let number = signed["source-identifier"], case .number = number, let digits = number.int64 {
            // Impressions carry it as an integer; accept that reading too.
            sourceIdentifier = String(digits)
        } else {
            sourceIdentifier = try reader.string("source-identifier")
        }
        try FieldRules.sourceIdentifier(sourceIdentifier, field: "source-identifier")
        let conversionType = ConversionType(rawValue: try reader.string("conversion-type"))
        try FieldRules.conversionType(conversionType)
        let sequenceIndex = try reader.int64("postback-sequence-index")
        try FieldRules.sequenceIndex(sequenceIndex, field: "postback-sequence-index")
        let postbackID = try reader.string("postback-identifier")
        try FieldRules.uuid(postbackID, field: "postback-identifier")
        let adNetworkID = try reader.string("ad-network-identifier")
        try FieldRules.adNetworkID(adNetworkID, field: "ad-network-identifier")
        let marketplaceID = try reader.optionalString("marketplace-identifier")
        if let marketplaceID { try FieldRules.printable(marketplaceID, field: "marketplace-identifier") }
        let impressionType = try reader.string("impression-type")
        try FieldRules.printable(impressionType, field: "impression-type")
        var unsigned = JSONObject()
        for member in outer.members where member.key != "jws-string" {
            unsigned.members.append(member)
        }
        var postback = Postback(
            family: .aak,
            version: nil,
            postbackID: postbackID,
            adNetworkID: adNetworkID,
            sourceIdentifier: sourceIdentifier,
            campaignID: nil,
            advertisedItemID: try reader.identifier("advertised-item-identifier"),
            conversionType: conversionType,
            redownload: nil,
            didWin: try reader.bool("did-win"),
            postbackSequenceIndex: Int(sequenceIndex),
            publisherItemID: try reader.optionalIdentifier("publisher-item-identifier"),
            sourceDomain: nil,
            marketplaceID: marketplaceID,
            impressionType: impressionType,
            fidelityType: nil,
            signedFields: signed,
            unsignedFields: unsigned
        )
        let outerReader = FieldReader(object: outer)
        try FieldRules.unsignedValues(outerReader, into: &postback)
        if let interaction = try outerReader.optionalString("ad-interaction-type") {
            let value = InteractionType(rawValue: interaction)
            guard value.kind != nil else {
                throw FieldProblem(.fieldOutOfRange, field: "ad-interaction-type", "ad-interaction-type must be click or view, got \(FieldRules.quoted(interaction))")
            }
            postback.adInteractionType = value
        }
        return postback
    }
}
