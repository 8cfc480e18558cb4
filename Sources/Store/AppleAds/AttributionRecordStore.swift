import AdServices
import Foundation
import JWS
import Postback

/// What storing a client-reported iAd record did.
public struct StoredAttribution: Sendable, Equatable {
    /// The record's id (the earlier one for a repeat).
    public let id: Int64
    /// False when the same submission (same install id, or the same content) was stored before.
    public let isNew: Bool
}

/// Apple Ads attribution records: AdServices records from token jobs and client-reported iAd dictionaries.
public struct AttributionRecordStore: Sendable {
    let engine: any DatabaseEngine

    /// Stores a normalised iAd dictionary, reported by the app and labelled so, once: a repeat with the same app and
    /// install id, or without an install id the same app and exact body, returns the earlier record.
    public func storeClientReported(_ record: AttributionRecord, app: AppID?, installID: String?, body: [UInt8], receivedAt: Date = Date()) async throws -> StoredAttribution {
        let appText = app?.description ?? ""
        let dedupKey = installID.map { "iad:\(appText):install:\($0)" }
            ?? "iad:\(appText):body:" + Base64.encode(sha256(body), alphabet: .url)
        return try await engine.write { db in
            if let existing = try db.value("SELECT id FROM attribution_records WHERE dedup_key = ?", [dedupKey], as: Int64.self) {
                return StoredAttribution(id: existing, isNew: false)
            }
            let id = try Self.insert(db, record, app: app?.description, installID: installID, body: body, receivedAt: receivedAt, jobID: nil, dedupKey: dedupKey)
            guard let id else {
                // Another receiver stored the same submission a moment ago.
                let earlier = try db.value("SELECT id FROM attribution_records WHERE dedup_key = ?", [dedupKey], as: Int64.self) ?? 0
                return StoredAttribution(id: earlier, isNew: false)
            }
            return StoredAttribution(id: id, isNew: true)
        }
    }

    /// Inserts one attribution record row; `jobID` links it to the token job it came from (at most one record per job).
    /// Returns its id, or nil when a record with the same `dedupKey` exists.
    @discardableResult
    static func insert(_ db: any SQLSession, _ record: AttributionRecord, app: String?, installID: String?, body: [UInt8], receivedAt: Date, jobID: Int64?, dedupKey: String? = nil) throws -> Int64? {
        let values: [any SQLValueConvertible] = [
            record.source.rawValue, Timestamp.format(receivedAt), app, installID, record.attribution, record.isDetailed, record.isTestPayload,
            record.orgID, record.orgName, record.campaignID, record.campaignName, record.adGroupID, record.adGroupName,
            record.keywordID, record.keyword, record.keywordMatchType, record.adID, record.creativeSetID,
            record.conversionType, record.conversionTypeRaw, record.claimType,
            record.clickDate.map(Timestamp.format), record.impressionDate.map(Timestamp.format),
            record.purchaseDate.map(Timestamp.format), record.conversionDate.map(Timestamp.format),
            record.countryOrRegion, record.supplyPlacement, JSONValue.object(record.unknownFields).serialized, Data(body), jobID, dedupKey,
        ]
        return try db.value("""
            INSERT INTO attribution_records (source, received_at, app, install_id, attribution, detailed, test_payload,
                org_id, org_name, campaign_id, campaign_name, ad_group_id, ad_group_name, keyword_id, keyword, keyword_match_type,
                ad_id, creative_set_id, conversion_type, conversion_type_raw, claim_type, click_date, impression_date,
                purchase_date, conversion_date, country_or_region, supply_placement, unknown_json, body, job_id, dedup_key)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING RETURNING id
            """, values, as: Int64.self)
    }

    /// The `apple_ads_attributions` view's columns, oldest first, after the `after` id cursor.
    public func records(after: Int64, limit: Int) async throws -> ReportTable {
        let columns = Self.columns
        let rows = try await engine.read { db in
            try db.rows("SELECT \(columns.joined(separator: ", ")) FROM apple_ads_attributions WHERE id > ? ORDER BY id LIMIT ?",
                        [after, limit]).map { $0.values.map(ReportTable.cell) }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    static let columns = [
        "id", "source", "reported_by", "received_at", "app", "install_id", "attribution", "detailed", "test_payload", "org_id", "org_name",
        "campaign_id", "campaign_name", "ad_group_id", "ad_group_name", "keyword_id", "keyword", "keyword_match_type", "ad_id",
        "creative_set_id", "conversion_type", "claim_type", "click_date", "impression_date", "purchase_date", "conversion_date",
        "country_or_region", "supply_placement",
    ]
}

/// A report over Apple Ads attribution records: filters and grouping from closed lists, so no caller text reaches SQL.
public struct AttributionReportQuery: Sendable, Equatable {
    /// A grouping dimension: the columns it adds (an id and, where records carry one, its name).
    public enum Dimension: String, Sendable, CaseIterable {
        case day, app, source, org, campaign, adGroup = "ad_group", keyword, ad, claimType = "claim_type", country
        case conversionType = "conversion_type", supplyPlacement = "supply_placement"

        /// Whether the grouped column holds text (the others are integers).
        var isText: Bool { ![.org, .campaign, .adGroup, .keyword, .ad].contains(self) }

        /// The grouped column and the name column shown beside it (names come from iAd records only).
        var columns: (group: String, name: String?) {
            switch self {
            case .day: ("day", nil)
            case .app: ("app", nil)
            case .source: ("source", nil)
            case .org: ("org_id", "org_name")
            case .campaign: ("campaign_id", "campaign_name")
            case .adGroup: ("ad_group_id", "ad_group_name")
            case .keyword: ("keyword_id", "keyword")
            case .ad: ("ad_id", "creative_set_id")
            case .claimType: ("claim_type", nil)
            case .country: ("country_or_region", nil)
            case .conversionType: ("conversion_type", nil)
            case .supplyPlacement: ("supply_placement", nil)
            }
        }
    }

    public var from: Date?
    public var to: Date?
    /// The app id the token or dictionary came with: a token's is the caller's own text, so any text.
    public var app: String?
    /// `adservices` or `iad`.
    public var source: String?
    /// Include Apple's developer-mode test payloads; by default they are left out.
    public var includeTest = false
    /// Count iAd records, which the app reports, beside Apple's AdServices records; by default only Apple's are counted
    /// (`source=iad` asks for the app-reported ones alone).
    public var includeClientReported = false
    public var groupBy: [Dimension] = []
    /// The zone of `day` buckets and of dates and times given without a zone.
    public var timeZone = ReportTimeZone.utc

    /// The metric columns, after the dimension columns.
    public static let metrics = ["records", "attributed", "not_attributed", "downloads", "redownloads", "preorders", "detailed", "clicks", "impressions"]

    public init() {}


    /// The `apple_ads_attributions` view with the names read from Apple's API beside each record's ids.
    static let recordsWithNames = """
        (SELECT a.*, nc.name AS campaign_api_name, ng.name AS ad_group_api_name, nk.name AS keyword_api_name
         FROM apple_ads_attributions a
         LEFT JOIN apple_ads_names nc ON nc.org_id = a.org_id AND nc.kind = 'campaign' AND nc.id = a.campaign_id
         LEFT JOIN apple_ads_names ng ON ng.org_id = a.org_id AND ng.kind = 'ad_group' AND ng.id = a.ad_group_id
         LEFT JOIN apple_ads_names nk ON nk.org_id = a.org_id AND nk.kind = 'keyword' AND nk.id = a.keyword_id)
        """

    private static func countWhere(_ condition: String) -> String { "coalesce(sum(CASE WHEN \(condition) THEN 1 ELSE 0 END), 0)" }

    /// The report's column names: each dimension's columns, then the metrics.
    public var columns: [String] {
        groupBy.flatMap { dimension in [dimension.columns.group] + (dimension.columns.name.map { [$0] } ?? []) } + Self.metrics
    }

    func sql(_ dialect: SQLDialect) -> (String, [any SQLValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any SQLValueConvertible] = []
        if let from { conditions.append("received_at >= ?"); arguments += [Timestamp.format(from)] }
        if let to { conditions.append("received_at < ?"); arguments += [Timestamp.format(to)] }
        if let app { conditions.append("app = ?"); arguments += [app] }
        if let source {
            conditions.append("source = ?")
            arguments += [source]
        } else if !includeClientReported {
            conditions.append("reported_by = 'apple'")
        }
        if !includeTest { conditions.append("test_payload = 0") }
        // The view's `day` is the UTC day; another zone's day is computed from the time received.
        func group(_ dimension: Dimension) -> String {
            dimension == .day && !timeZone.isUTC ? timeZone.day(of: "received_at", from: from, to: to, dialect: dialect) : dimension.columns.group
        }
        // A name in the records (iAd dictionaries carry them), else the one read from Apple's API for the id.
        func name(_ dimension: Dimension, _ column: String) -> String {
            let fetched: String? = switch dimension {
            case .campaign: "campaign_api_name"
            case .adGroup: "ad_group_api_name"
            case .keyword: "keyword_api_name"
            default: nil
            }
            return fetched.map { "coalesce(max(\(column)), max(\($0)))" } ?? "max(\(column))"
        }
        let selected = groupBy.flatMap { dimension in
            ["\(group(dimension)) AS \(dimension.columns.group)"] + (dimension.columns.name.map { [name(dimension, $0)] } ?? [])
        } + [
            // Counts are numbers: a group whose records have no conversion type or claim type counts 0, never null.
            "count(*)", "coalesce(sum(attribution), 0)", "coalesce(sum(1 - attribution), 0)",
            Self.countWhere("conversion_type = 'download'"), Self.countWhere("conversion_type = 'redownload'"),
            Self.countWhere("conversion_type = 'preorder'"), "coalesce(sum(detailed), 0)",
            Self.countWhere("lower(claim_type) = 'click'"), Self.countWhere("lower(claim_type) = 'impression'"),
        ]
        let grouping = groupBy.map(group)
        var sql = "SELECT \(selected.joined(separator: ", ")) FROM \(Self.recordsWithNames) records"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if !grouping.isEmpty {
            let order = groupBy.map { dimension in
                dialect.orderTerm(group(dimension), position: 0, isText: dimension.isText)
            }
            sql += " GROUP BY \(grouping.joined(separator: ", ")) ORDER BY "
            sql += dialect == .sqlite ? grouping.joined(separator: ", ") : order.joined(separator: ", ")
        }
        return (sql, arguments)
    }
}

extension AttributionRecordStore {
    /// Runs an attribution report.
    public func report(_ query: AttributionReportQuery) async throws -> ReportTable {
        let (sql, arguments) = query.sql(engine.dialect)
        let rows = try await engine.read { db in try db.rows(sql, arguments, reuse: .once).map { $0.values.map(ReportTable.cell) } }
        return ReportTable(columns: query.columns, rows: rows, timeZone: query.timeZone.identifier)
    }
}
