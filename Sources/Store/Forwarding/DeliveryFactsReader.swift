import Foundation
import JWS
import Postback

/// Reads the facts enriched templates send, for the postbacks of one claim, in one query over the `conversions` view
/// with the names in force (as reports find them) and, when a template asks for cost, the imported spend.
enum DeliveryFactsReader {
    /// The facts of each postback in `ids`, by id, read in the caller's session; `withCost` also reads the spend.
    static func facts(_ db: any SQLSession, ids: [Int64], withCost: Bool) throws -> [Int64: DeliveryFacts] {
        guard !ids.isEmpty else { return [:] }
        let columns = ReportColumns.rows
        let names: [ReportQuery.Dimension] = [.adNetworkName, .campaignName, .adGroupName, .creativeName]
        let nameColumns = names.compactMap { dimension in dimension.expression(columns, db.dialect).map { "\($0) AS \(dimension.rawValue)" } }
        let sql = """
            SELECT c.id, c.dedup_key, c.postback_identifier, c.received_at, c.estimated_install_at, c.time_zone, c.protocol, c.version,
                   c.environment, c.outcome, c.countable, c.ad_network_id, c.app, c.app_name, c.source_identifier, c.campaign, c.ad_group, c.creative,
                   c.conversion_type, c.conversion_class, c.conversion_window, c.did_win, c.redownload, c.interaction, c.fidelity_type,
                   c.publisher_item_id, c.source_domain, c.conversion_value_unsigned, c.coarse_value_unsigned, c.country_code_unsigned,
                   c.revenue_min_micros, c.revenue_max_micros, c.currency, \(nameColumns.joined(separator: ", ")),
                   coalesce(sm.campaign_id, c.campaign) AS campaign_id, coalesce(sm.ad_group_id, c.ad_group) AS ad_group_id,
                   coalesce(sm.creative_id, c.creative) AS creative_id
            FROM conversions c\(ReportQuery.Dimension.joins(names, columns))
            WHERE c.id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))
            """
        var facts: [Int64: DeliveryFacts] = [:]
        var costs: [CostKey: (micros: Int64, currency: String)?] = [:]
        for row in try db.rows(sql, ids) {
            var fact = DeliveryFacts.none
            func text(_ column: String, _ field: DeliveryField) throws {
                if let value = try row.get(column, as: String?.self) { fact[field] = .string(value) }
            }
            func integer(_ column: String, _ field: DeliveryField) throws {
                if let value = try row.get(column, as: Int64?.self) { fact[field] = .number(String(value)) }
            }
            func flag(_ column: String, _ field: DeliveryField) throws {
                if let value = try row.get(column, as: Int64?.self) { fact[field] = .bool(value != 0) }
            }
            try text("dedup_key", .dedupKey)
            try text("postback_identifier", .postbackIdentifier)
            let receivedAt = try row.get("received_at", as: String.self)
            fact[.receivedAt] = .string(receivedAt)
            if let moment = Timestamp.parse(receivedAt) {
                let milliseconds = Int64((moment.timeIntervalSince1970 * 1000).rounded())
                fact[.receivedAtUnix] = .number(String(milliseconds / 1000))
                fact[.receivedAtUnixMilliseconds] = .number(String(milliseconds))
            }
            let zone = TimeZone(identifier: try row.get("time_zone", as: String.self)) ?? TimeZone(identifier: "UTC")!
            var installDay: String?
            if let estimated = try row.get("estimated_install_at", as: String?.self) {
                fact[.estimatedInstallAt] = .string(estimated)
                installDay = Timestamp.parse(estimated).map { Self.day($0, in: zone) }
                fact[.installDay] = installDay.map { .string($0) }
            }
            for (column, field) in [("protocol", DeliveryField.protocol), ("version", .version), ("environment", .environment), ("outcome", .outcome),
                                    ("ad_network_id", .adNetworkID), ("app_name", .appName), ("source_identifier", .sourceIdentifier),
                                    ("campaign", .campaign), ("ad_group", .adGroup), ("creative", .creative), ("conversion_type", .conversionType),
                                    ("conversion_class", .conversionClass), ("interaction", .interaction), ("source_domain", .sourceDomain),
                                    ("coarse_value_unsigned", .coarseValue), ("country_code_unsigned", .countryCode), ("currency", .currency),
                                    ("ad_network_name", .adNetworkName), ("campaign_name", .campaignName), ("ad_group_name", .adGroupName),
                                    ("creative_name", .creativeName), ("campaign_id", .campaignID), ("ad_group_id", .adGroupID),
                                    ("creative_id", .creativeID)] {
                try text(column, field)
            }
            for (column, field) in [("app", DeliveryField.app), ("conversion_window", .conversionWindow), ("fidelity_type", .fidelityType),
                                    ("publisher_item_id", .publisherItemID), ("conversion_value_unsigned", .conversionValue)] {
                try integer(column, field)
            }
            try flag("did_win", .didWin)
            try flag("countable", .countable)
            try flag("redownload", .redownload)
            if let interaction = try row.get("interaction", as: String?.self) { fact[.viewThrough] = .bool(interaction == "view") }
            if let minimum = try row.get("revenue_min_micros", as: Int64?.self), let maximum = try row.get("revenue_max_micros", as: Int64?.self) {
                fact[.revenueMin] = .number(Money.decimal(micros: minimum))
                fact[.revenueMax] = .number(Money.decimal(micros: maximum))
                fact[.revenueMid] = .number(Money.decimal(halfOfMicros: minimum + maximum))
            }
            let id = try row.get("id", as: Int64.self)
            if withCost, let installDay, let app = try row.get("app", as: Int64?.self), let network = try row.get("ad_network_id", as: String?.self),
               try row.get("conversion_class", as: String?.self) == "install", try row.get("did_win", as: Int64.self) == 1,
               try row.get("conversion_window", as: Int64.self) == 0 {
                let key = CostKey(day: installDay, app: app, adNetwork: network, campaign: try row.get("campaign", as: String?.self) ?? "")
                if costs[key] == nil { costs[key] = .some(try Self.costPerInstall(db, key)) }
                if let cost = costs[key] ?? nil {
                    fact[.costPerInstall] = .number(Money.decimal(micros: cost.micros))
                    fact[.costCurrency] = .string(cost.currency)
                }
            }
            facts[id] = fact
        }
        return facts
    }

    /// A campaign on one day, as spend is imported.
    struct CostKey: Hashable {
        let day: String
        let app: Int64
        let adNetwork: String
        let campaign: String
    }

    /// The campaign's spend that day over its claimed installs that day, in whole millionths, from the import in force;
    /// nil without both, or when the day's spend is in more than one currency.
    static func costPerInstall(_ db: any SQLSession, _ key: CostKey) throws -> (micros: Int64, currency: String)? {
        let rows = try db.rows("""
            SELECT sum(s.spend_micros) AS spend, sum(s.claimed_installs) AS claimed, s.currency
            FROM spend s JOIN spend_current sc ON sc.day = s.day AND sc.app = s.app AND sc.ad_network_id = s.ad_network_id AND sc.import_id = s.import_id
            WHERE s.day = ? AND s.app = ? AND s.ad_network_id = ? AND s.campaign = ? AND s.spend_micros IS NOT NULL
            GROUP BY s.currency
            """, [key.day, key.app, key.adNetwork, key.campaign])
        guard rows.count == 1, let row = rows.first, let spend = try row.get("spend", as: Int64?.self),
              let claimed = try row.get("claimed", as: Int64?.self), claimed > 0, let currency = try row.get("currency", as: String?.self) else { return nil }
        return ((spend + claimed / 2) / claimed, currency)
    }

    /// `moment`'s day in `zone`, `YYYY-MM-DD`.
    static func day(_ moment: Date, in zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: moment)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
