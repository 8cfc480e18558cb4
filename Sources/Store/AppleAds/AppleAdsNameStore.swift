import AdServices
import Foundation
import Postback

/// Names of Apple Ads campaigns, ad groups and keywords, read from Apple's API for the ids in AdServices records and
/// kept here, so reports show names and Apple is asked again only when a name is older than the refresh age.
public struct AppleAdsNameStore: Sendable {
    let engine: any DatabaseEngine

    /// Where a name came from: the Platform API, v5, or neither (Apple does not know the id).
    public enum Source: String, Sendable {
        case platform, v5
        case notFound = "not_found"
    }

    /// Campaigns, ad groups and keywords of Apple's AdServices records (test payloads left out) without a name fetched
    /// at or after `cutoff`; at most `limit` of each kind.
    public func wanted(fetchedBefore cutoff: Date, limit: Int) async throws -> [AppleAdsAPI.Entity] {
        let since = Timestamp.format(cutoff)
        @Sendable func fresh(_ kind: String, _ id: String) -> String {
            "NOT EXISTS (SELECT 1 FROM apple_ads_names n WHERE n.org_id = r.org_id AND n.kind = '\(kind)' AND n.id = r.\(id) AND n.fetched_at >= ?)"
        }
        let apple = "r.source = 'adservices' AND r.test_payload = 0 AND r.org_id IS NOT NULL AND r.campaign_id IS NOT NULL"
        return try await engine.read { db in
            let campaigns = try db.rows("SELECT DISTINCT r.org_id, r.campaign_id FROM attribution_records r WHERE \(apple) AND \(fresh("campaign", "campaign_id")) ORDER BY 1, 2 LIMIT ?", [since, limit])
                .map { AppleAdsAPI.Entity.campaign(org: try $0.get("org_id"), campaign: try $0.get("campaign_id")) }
            let adGroups = try db.rows("SELECT DISTINCT r.org_id, r.campaign_id, r.ad_group_id FROM attribution_records r WHERE \(apple) AND r.ad_group_id IS NOT NULL AND \(fresh("ad_group", "ad_group_id")) ORDER BY 1, 2, 3 LIMIT ?", [since, limit])
                .map { AppleAdsAPI.Entity.adGroup(org: try $0.get("org_id"), campaign: try $0.get("campaign_id"), adGroup: try $0.get("ad_group_id")) }
            let keywords = try db.rows("SELECT DISTINCT r.org_id, r.campaign_id, r.ad_group_id, r.keyword_id FROM attribution_records r WHERE \(apple) AND r.ad_group_id IS NOT NULL AND r.keyword_id IS NOT NULL AND \(fresh("keyword", "keyword_id")) ORDER BY 1, 2, 3, 4 LIMIT ?", [since, limit])
                .map { AppleAdsAPI.Entity.keyword(org: try $0.get("org_id"), campaign: try $0.get("campaign_id"), adGroup: try $0.get("ad_group_id"), keyword: try $0.get("keyword_id")) }
            return campaigns + adGroups + keywords
        }
    }

    /// Stores `entity`'s name (nil when Apple does not know it) as read now from `source`.
    public func record(_ entity: AppleAdsAPI.Entity, name: String?, source: Source) async throws {
        let (campaign, adGroup): (Int64, Int64?) = switch entity {
        case .campaign(_, let campaign): (campaign, nil)
        case .adGroup(_, let campaign, let adGroup), .keyword(_, let campaign, let adGroup, _): (campaign, adGroup)
        }
        let now = Timestamp.format(Date())
        _ = try await engine.write { db in
            try db.execute("INSERT INTO apple_ads_names (org_id, kind, id, campaign_id, ad_group_id, name, source, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                           + "ON CONFLICT (org_id, kind, id) DO UPDATE SET name = excluded.name, source = excluded.source, fetched_at = excluded.fetched_at",
                           [entity.org, entity.kind, entity.id, campaign, adGroup, name, source.rawValue, now])
        }
    }
}
