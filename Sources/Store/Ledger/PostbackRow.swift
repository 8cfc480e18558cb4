import Foundation
import JWS
import Postback

/// A postback flattened into the `postbacks` table's columns, prepared outside the writer so the single
/// writer thread only runs SQL. `receipt_id` is the last column and is filled in at insert time.
struct PostbackRow: Sendable {
    let values: [SQLValue]
    let contentHash: Data

    init(postback: Postback, intake: (route: IntakeRoute, result: VerificationResult, decision: PolicyDecision), receivedAt: String, reason: String?) {
        var countable = false
        if case .accept(let isCountable, _) = intake.decision { countable = isCountable }
        var keyID: String?
        var environment: String?
        if case .verified(_, let signer) = intake.result {
            keyID = signer.keyID
            environment = signer.environment.rawValue
        }
        // Members sorted by key: the same content in another order stores and hashes the same.
        let signedJSON = Self.canonical(postback.signedFields)
        let unsignedJSON = Self.canonical(postback.unsignedFields)
        let tier = postback.tier
        contentHash = Data(sha256(Array(signedJSON.utf8) + [0x0A] + Array(unsignedJSON.utf8)))
        let named: [(column: String, value: any SQLValueConvertible)] = [
            ("dedup_key", postback.dedupKey),
            ("protocol", postback.family.rawValue),
            ("version", postback.version),
            ("outcome", intake.result.outcome.rawValue),
            ("reason", reason),
            ("key_id", keyID),
            ("environment", environment),
            ("countable", countable),
            ("received_at", receivedAt),
            ("postback_identifier", postback.postbackID),
            ("ad_network_id", postback.adNetworkID),
            ("source_identifier", postback.sourceIdentifier),
            ("campaign_id", postback.campaignID),
            ("advertised_item_id", postback.advertisedItemID),
            ("conversion_type", postback.conversionType.rawValue),
            ("redownload", postback.redownload),
            ("did_win", postback.didWin),
            ("conversion_window", postback.postbackSequenceIndex),
            ("publisher_item_id", postback.publisherItemID),
            ("source_domain", postback.sourceDomain),
            ("marketplace_id", postback.marketplaceID),
            ("impression_type", postback.impressionType),
            ("fidelity_type", postback.fidelityType),
            ("conversion_value", postback.conversionValue),
            ("coarse_value", postback.coarseConversionValue?.rawValue),
            ("ad_interaction_type", postback.adInteractionType?.rawValue),
            ("country_code", postback.countryCode),
            ("source_digits", postback.sourceDigits),
            ("digit_count", postback.sourceIdentifier?.count),
            ("conversion_class", postback.conversionType.conversionClass?.rawValue),
            ("interaction", postback.interaction?.rawValue),
            ("tier_min", tier.minimum),
            ("tier_max", tier.maximum),
            ("signed_json", signedJSON),
            ("unsigned_json", unsignedJSON),
            ("route", intake.route.rawValue),
            ("content_hash", contentHash),
        ]
        assert(named.map(\.column) + ["receipt_id"] == Self.columnNames, "PostbackRow values and columnNames disagree")
        values = named.map { $0.value.sqlValue }
    }

    /// Members sorted by key, so the same content in another order hashes the same.
    static func canonical(_ object: JSONObject) -> String {
        JSONValue.object(JSONObject(object.members.sorted { $0.key < $1.key })).serialized
    }

    /// The values of ``insertColumns``.
    func insertValues(receiptID: Int64, decoding: PostbackDecoding) -> [SQLValue] {
        values + decoding.columns + [SQLValue.integer(receiptID)]
    }

    /// A new row's columns: the postback's, its decoding's (``PostbackDecoding``), then `receipt_id`. PostgreSQL's
    /// `ingest_batch` (migration v17) lists them in its frozen text: a change here needs a migration that replaces it.
    static let insertColumns = columnNames.dropLast() + PostbackDecoding.columnNames + ["receipt_id"]
    /// Each insert column's PostgreSQL array type for a batch insert (``SQLArray``); integers of every width go as `bigint`.
    static let postgresColumnTypes: [SQLArray.Element] = columnNames.dropLast().map { column in
        switch column {
        case "content_hash": .bytea
        case "countable", "campaign_id", "advertised_item_id", "redownload", "did_win", "conversion_window", "publisher_item_id",
             "fidelity_type", "conversion_value", "digit_count", "tier_min", "tier_max": .bigint
        default: .text
        }
    } + PostbackDecoding.postgresColumnTypes + [.bigint]
    static let updateSQL = "UPDATE postbacks SET \(columnNames.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"

    func update(_ db: any SQLSession, id: Int64, receiptID: Int64) throws {
        try db.execute(Self.updateSQL, values + [SQLValue.integer(receiptID), SQLValue.integer(id)])
    }

    /// The columns in the order `values` lists them.
    static let columnNames = [
        "dedup_key", "protocol", "version", "outcome", "reason", "key_id", "environment", "countable", "received_at",
        "postback_identifier", "ad_network_id", "source_identifier", "campaign_id", "advertised_item_id", "conversion_type",
        "redownload", "did_win", "conversion_window", "publisher_item_id", "source_domain", "marketplace_id", "impression_type",
        "fidelity_type", "conversion_value", "coarse_value", "ad_interaction_type", "country_code", "source_digits", "digit_count",
        "conversion_class", "interaction", "tier_min", "tier_max", "signed_json", "unsigned_json", "route", "content_hash", "receipt_id",
    ]
}
