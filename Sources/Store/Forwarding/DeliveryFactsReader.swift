import Foundation
import JWS
import Postback

/// Reads the facts enriched templates send, for the postbacks of one claim, in one query over the `conversions` view
/// with the names in force (as reports find them) and, when a template asks for cost, the imported spend in force.
enum DeliveryFactsReader {
    /// The facts of each postback in `ids`, by id, read in the caller's session; `withCost` also reads the spend.
    static func facts(_ db: any SQLSession, ids: [Int64], withCost: Bool) throws -> [Int64: DeliveryFacts] {
        guard !ids.isEmpty else { return [:] }
        let sql = Self.sql(ids: ids.count, withCost: withCost, db.dialect).sql
        var facts: [Int64: DeliveryFacts] = [:]
        for row in try db.rows(sql, ids) {
            let (id, fact) = try Self.fact(row)
            facts[id] = fact
        }
        return facts
    }

    /// The same facts in one statement on a connection of its own, outside any transaction: what a claim's deliveries
    /// read after the claim commits, without a transaction's round trips.
    static func facts(_ engine: any DatabaseEngine, ids: [Int64], withCost: Bool) async throws -> [Int64: DeliveryFacts] {
        guard !ids.isEmpty else { return [:] }
        let (sql, columns) = Self.sql(ids: ids.count, withCost: withCost, engine.dialect)
        return try await engine.readRows(sql, ids, reuse: .cached, into: [Int64: DeliveryFacts]()) { facts, cells in
            let (id, fact) = try Self.fact(SQLRow(columns: columns, values: cells.values))
            facts[id] = fact
        }
    }

    /// The query over the `conversions` view with the names in force (as reports find them) and, with `withCost`, the
    /// install's cost from the spend in force (``costSQL(_:)``), and the names of its columns in order.
    static func sql(ids: Int, withCost: Bool, _ dialect: SQLDialect) -> (sql: String, columns: [String]) {
        let columns = ReportColumns.rows
        let names: [ReportQuery.Dimension] = [.adNetworkName, .campaignName, .adGroupName, .creativeName]
        var selected: [(expression: String, name: String)] = [
            "id", "dedup_key", "postback_identifier", "received_at", "estimated_install_at", "time_zone", "protocol", "version", "environment",
            "outcome", "countable", "ad_network_id", "app", "app_name", "source_identifier", "campaign", "ad_group", "creative", "conversion_type",
            "conversion_class", "conversion_window", "did_win", "redownload", "interaction", "fidelity_type", "publisher_item_id", "source_domain",
            "conversion_value_unsigned", "coarse_value_unsigned", "country_code_unsigned", "revenue_min_micros", "revenue_max_micros", "currency",
        ].map { ("c.\($0)", $0) }
        selected += names.compactMap { dimension in dimension.expression(columns, dialect).map { ($0, dimension.rawValue) } }
        selected += [("coalesce(sm.campaign_id, c.campaign)", "campaign_id"), ("coalesce(sm.ad_group_id, c.ad_group)", "ad_group_id"),
                     ("coalesce(sm.creative_id, c.creative)", "creative_id")]
        if withCost { selected.append((costSQL(dialect), "cost")) }
        let sql = """
            SELECT \(selected.map { "\($0.expression) AS \($0.name)" }.joined(separator: ", "))
            FROM conversions c\(ReportQuery.Dimension.joins(names, columns))
            WHERE c.id IN (\(Array(repeating: "?", count: ids).joined(separator: ", ")))
            """
        return (sql, selected.map(\.name))
    }

    /// A winning first-window install's cost: its campaign's (as performance names it: the dated mapping's id, else the
    /// digits) spend on its install day (in the app's zone, as
    /// `cohorts_daily` counts it) over the installs the network claims that day, in whole millionths, from the import in
    /// force, as `<micros>:<currency>`; null without both, or when the day's spend is in more than one currency.
    static func costSQL(_ dialect: SQLDialect) -> String {
        let day = dialect == .postgres
            ? "to_char(c.estimated_install_at::timestamptz AT TIME ZONE c.time_zone, 'YYYY-MM-DD')"
            : "CASE WHEN c.time_zone = 'UTC' THEN substr(c.estimated_install_at, 1, 10) ELSE date(c.estimated_install_at, coalesce((SELECT o.offset_seconds "
              + "FROM time_zone_offsets o WHERE o.time_zone = c.time_zone AND o.valid_from <= c.estimated_install_at ORDER BY o.valid_from DESC LIMIT 1), 0) || ' seconds') END"
        // Half a claimed install rounds the millionths half up, as whole numbers on both engines.
        let micros = dialect == .postgres
            ? "CAST(div(sum(s.spend_micros) + div(sum(s.claimed_installs), 2), sum(s.claimed_installs)) AS BIGINT)"
            : "(sum(s.spend_micros) + sum(s.claimed_installs) / 2) / sum(s.claimed_installs)"
        return """
            CASE WHEN c.conversion_class = 'install' AND c.did_win = 1 AND c.conversion_window = 0 AND c.estimated_install_at IS NOT NULL THEN (
                SELECT CAST(\(micros) AS TEXT) || ':' || min(s.currency)
                FROM spend s JOIN spend_current sc ON sc.day = s.day AND sc.app = s.app AND sc.ad_network_id = s.ad_network_id AND sc.import_id = s.import_id
                WHERE s.day = \(day) AND s.app = c.app AND s.ad_network_id = c.ad_network_id AND s.campaign = coalesce(sm.campaign_id, c.campaign, '') AND s.spend_micros IS NOT NULL
                GROUP BY s.app, s.ad_network_id
                HAVING count(DISTINCT s.currency) = 1 AND count(s.currency) = count(*) AND sum(s.claimed_installs) > 0) END
            """
    }

    /// One row's postback id and facts.
    static func fact(_ row: SQLRow) throws -> (Int64, DeliveryFacts) {
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
        if let estimated = try row.get("estimated_install_at", as: String?.self) {
            fact[.estimatedInstallAt] = .string(estimated)
            fact[.installDay] = Timestamp.parse(estimated).map { .string(Self.day($0, in: zone)) }
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
        if row.columns.contains("cost"), let cost = try row.get("cost", as: String?.self) {
            let parts = cost.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let micros = Int64(parts[0]) {
                fact[.costPerInstall] = .number(Money.decimal(micros: micros))
                fact[.costCurrency] = .string(String(parts[1]))
            }
        }
        return (try row.get("id", as: Int64.self), fact)
    }

    /// `moment`'s day in `zone`, `YYYY-MM-DD`.
    static func day(_ moment: Date, in zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: moment)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
