import AdServices
import Foundation
import GRDB
import JWS
import Postback

extension PostbackStore {
    /// Stores an attribution record (AdServices or normalised iAd) with the body it came from; returns its id.
    public func storeAttribution(_ record: AttributionRecord, app: String?, installID: String?, body: [UInt8], receivedAt: Date = Date()) async throws -> Int64 {
        let values: [(any DatabaseValueConvertible)?] = [
            record.source.rawValue, Timestamp.format(receivedAt), app, installID, record.attribution, record.isDetailed, record.isTestPayload,
            record.orgID, record.orgName, record.campaignID, record.campaignName, record.adGroupID, record.adGroupName,
            record.keywordID, record.keyword, record.keywordMatchType, record.adID, record.creativeSetID,
            record.conversionType, record.conversionTypeRaw, record.claimType,
            record.clickDate.map(Timestamp.format), record.impressionDate.map(Timestamp.format),
            record.purchaseDate.map(Timestamp.format), record.conversionDate.map(Timestamp.format),
            record.countryOrRegion, record.supplyPlacement, JSONValue.object(record.unknownFields).serialized, Data(body),
        ]
        let arguments = StatementArguments(values.map { $0?.databaseValue ?? .null })
        return try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO attribution_records (source, received_at, app, install_id, attribution, detailed, test_payload,
                    org_id, org_name, campaign_id, campaign_name, ad_group_id, ad_group_name, keyword_id, keyword, keyword_match_type,
                    ad_id, creative_set_id, conversion_type, conversion_type_raw, claim_type, click_date, impression_date,
                    purchase_date, conversion_date, country_or_region, supply_placement, unknown_json, body)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: arguments)
            return db.lastInsertedRowID
        }
    }

    /// The `apple_ads_attributions` view's columns, oldest first, after the `after` id cursor.
    public func attributionRecords(after: Int64, limit: Int) async throws -> ReportTable {
        let columns = Self.attributionColumns
        let rows = try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT \(columns.joined(separator: ", ")) FROM apple_ads_attributions WHERE id > ? ORDER BY id LIMIT ?",
                             arguments: [after, limit]).map { $0.databaseValues.map(Self.json) }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    static let attributionColumns = [
        "id", "source", "received_at", "app", "install_id", "attribution", "detailed", "test_payload", "org_id", "org_name",
        "campaign_id", "campaign_name", "ad_group_id", "ad_group_name", "keyword_id", "keyword", "keyword_match_type", "ad_id",
        "creative_set_id", "conversion_type", "claim_type", "click_date", "impression_date", "purchase_date", "conversion_date",
        "country_or_region", "supply_placement",
    ]
}
