import Foundation
import GRDB
import JWS
import Postback

/// A postback flattened into the `postbacks` table's columns.
struct PostbackRow {
    let values: [(column: String, value: (any DatabaseValueConvertible)?)]
    let contentHash: Data

    init(postback: Postback, intake: Intake, receivedAt: String, reason: String?) {
        var countable = false
        if case .accept(let isCountable) = intake.decision { countable = isCountable }
        var keyID: String?
        var environment: String?
        if case .verified(_, let signer) = intake.result {
            keyID = signer.keyID
            environment = signer.environment.rawValue
        }
        let signedJSON = JSONValue.object(postback.signedFields).serialized
        let unsignedJSON = JSONValue.object(postback.unsignedFields).serialized
        let tier = postback.tier
        contentHash = Data(sha256(Array(Self.canonical(postback.signedFields).utf8) + [0x0A] + Array(Self.canonical(postback.unsignedFields).utf8)))
        values = [
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
            ("body", Data(intake.body)),
            ("route", intake.route),
            ("content_hash", contentHash),
        ]
    }

    /// Members sorted by key, so the same content in another order hashes the same.
    static func canonical(_ object: JSONObject) -> String {
        JSONValue.object(JSONObject(object.members.sorted { $0.key < $1.key })).serialized
    }

    func insert(_ db: Database) throws -> Int64 {
        let columns = values.map(\.column).joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO postbacks (\(columns)) VALUES (\(placeholders))", arguments: StatementArguments(values.map(\.value)))
        return db.lastInsertedRowID
    }

    func update(_ db: Database, id: Int64) throws {
        let assignments = values.map { "\($0.column) = ?" }.joined(separator: ", ")
        try db.execute(sql: "UPDATE postbacks SET \(assignments) WHERE id = ?", arguments: StatementArguments(values.map(\.value) + [id]))
    }
}
