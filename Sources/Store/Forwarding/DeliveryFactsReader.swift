import Foundation
import JWS
import Postback
import Synchronization

/// Reads the facts enriched templates send, for the postbacks of one claim, in one query over the `conversions` view
/// with the names in force (as reports find them) and, when a template asks for cost, the imported spend in force.
enum DeliveryFactsReader {
    /// The facts of each postback in `ids`, by id, read in the caller's session; `withCost` also reads the spend.
    /// PostgreSQL binds the ids as one array, so the statement is one text whatever their number, prepared once per
    /// connection (planning it cost more than running it); SQLite keeps each count's statement compiled.
    static func facts(_ db: any SQLSession, ids: [Int64], withCost: Bool) throws -> [Int64: DeliveryFacts] {
        guard !ids.isEmpty else { return [:] }
        let (sql, arguments): (String, [any SQLValueConvertible]) = db.dialect == .postgres
            ? (Self.sql(ids: 0, withCost: withCost, .postgres).sql, [SQLArray(element: .bigint, values: ids.map { .integer($0) })])
            : (Self.sql(ids: ids.count, withCost: withCost, .sqlite).sql, ids)
        var facts: [Int64: DeliveryFacts] = [:]
        facts.reserveCapacity(ids.count)
        var zones: [String: TimeZone] = [:]
        // SQLite keeps a claim's few shapes compiled; a pull's pages (up to thousands of ids) are compiled for the call.
        let reuse: StatementReuse = db.dialect == .postgres ? .prepared : ids.count <= Self.cachedShapes ? .cached : .once
        try db.forEachRow(sql, arguments, reuse: reuse) { row in
            let (id, fact) = try Self.fact(row, zones: &zones)
            facts[id] = fact
        }
        return facts
    }

    /// The most ids whose SQLite statement each connection keeps compiled: a claim's (a rule's concurrency is at most
    /// this, ``ForwardRule``), not a pull page's.
    static let cachedShapes = ForwardRule.maximumConcurrency

    /// The query over the `conversions` view with the names in force (as reports find them) and, with `withCost`, the
    /// install's cost from the spend in force (``costSQL(_:)``), and the names of its columns in order: of `ids`
    /// placeholders on SQLite, of one array of ids on PostgreSQL.
    static func sql(ids: Int, withCost: Bool, _ dialect: SQLDialect) -> (sql: String, columns: [String]) {
        let key = SQLShape(ids: ids, withCost: withCost, dialect: dialect)
        if let made = made.withLock({ $0[key] }) { return made }
        let shape = Self.make(ids: ids, withCost: withCost, dialect)
        made.withLock { made in
            if made.count >= 256 { made.removeAll() }
            made[key] = shape
        }
        return shape
    }

    /// A query's shape: how many ids, whether with cost, on which engine.
    private struct SQLShape: Hashable {
        let ids: Int
        let withCost: Bool
        let dialect: SQLDialect
    }

    /// The queries made so far (a claim holds at most a rule's concurrency, so few shapes recur).
    private static let made = Mutex<[SQLShape: (sql: String, columns: [String])]>([:])

    private static func make(ids: Int, withCost: Bool, _ dialect: SQLDialect) -> (sql: String, columns: [String]) {
        let columns = ReportColumns.rows
        let names: [ReportQuery.Dimension] = [.adNetworkName, .campaignName, .adGroupName, .creativeName]
        let read = [
            "id", "dedup_key", "postback_identifier", "received_at", "estimated_install_at", "time_zone", "protocol", "version", "environment",
            "outcome", "countable", "ad_network_id", "app", "app_name", "source_identifier", "campaign", "ad_group", "creative", "conversion_type",
            "conversion_class", "conversion_window", "did_win", "redownload", "interaction", "fidelity_type", "publisher_item_id", "source_domain",
            "conversion_value_unsigned", "coarse_value_unsigned", "country_code_unsigned", "revenue_min_micros", "revenue_max_micros", "currency",
        ]
        var selected: [(expression: String, name: String)] = read.map { ("c.\($0)", $0) }
        selected += names.compactMap { dimension in dimension.expression(columns, dialect).map { ($0, dimension.rawValue) } }
        selected += [("coalesce(sm.campaign_id, c.campaign)", "campaign_id"), ("coalesce(sm.ad_group_id, c.ad_group)", "ad_group_id"),
                     ("coalesce(sm.creative_id, c.creative)", "creative_id")]
        if withCost { selected.append((costSQL(dialect), "cost")) }
        // The claim's rows of the view are made once (MATERIALIZED): a view's column is an expression, which the joins,
        // the mapping and the cost would otherwise compute again at each use (`estimated_install_at` is a date
        // function, several microseconds a row in all).
        let sql = """
            WITH c AS MATERIALIZED (
                SELECT \((read + ["source_levels"]).joined(separator: ", ")) FROM conversions
                WHERE \(dialect == .postgres ? "id = ANY(?::bigint[])" : "id IN (\(Array(repeating: "?", count: ids).joined(separator: ", ")))"))
            SELECT \(selected.map { "\($0.expression) AS \($0.name)" }.joined(separator: ", "))
            FROM c\(ReportQuery.Dimension.joins(names, columns))
            """
        return (sql, selected.map(\.name))
    }

    /// A winning first-window install's cost: its campaign's (as performance names it: the dated mapping's id, else the
    /// digits) spend on its install day (in the app's zone, as
    /// `cohorts_daily` counts it) over the installs the network claims that day, in whole millionths, from the import in
    /// force, as `<micros>:<currency>`; null without both, or when the day's spend is in more than one currency.
    /// One currency is `min = max` over currencies none of which is null (a sort for `count(DISTINCT)` cost more than
    /// the rest of the query); an aggregate without `GROUP BY` is one row, null without spend (no `HAVING` without
    /// `GROUP BY`, which SQLite before 3.39 refuses).
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
                SELECT CASE WHEN min(s.currency) = max(s.currency) AND count(s.currency) = count(*) AND sum(s.claimed_installs) > 0
                            THEN CAST(\(micros) AS TEXT) || ':' || min(s.currency) END
                FROM spend s JOIN spend_current sc ON sc.day = s.day AND sc.app = s.app AND sc.ad_network_id = s.ad_network_id AND sc.import_id = s.import_id
                WHERE s.day = \(day) AND s.app = c.app AND s.ad_network_id = c.ad_network_id AND s.campaign = coalesce(sm.campaign_id, c.campaign, '') AND s.spend_micros IS NOT NULL) END
            """
    }

    /// How each column of the facts query becomes a fact, by its place in the row (the same for both dialects; `cost`
    /// comes last when asked): resolved once, so a row is read without looking its columns up by name.
    private enum Reading {
        case text(Int), integer(Int), flag(Int)
    }

    private static let columnPlaces: [String: Int] = Dictionary(uniqueKeysWithValues: sql(ids: 1, withCost: true, .sqlite).columns.enumerated().map { ($1, $0) })

    private static let readings: [(place: Int, reading: Reading)] = {
        var plan: [(String, Reading)] = [("dedup_key", .text(DeliveryField.dedupKey.place)), ("postback_identifier", .text(DeliveryField.postbackIdentifier.place))]
        plan += [("protocol", DeliveryField.protocol), ("version", .version), ("environment", .environment), ("outcome", .outcome),
                 ("ad_network_id", .adNetworkID), ("app_name", .appName), ("source_identifier", .sourceIdentifier),
                 ("campaign", .campaign), ("ad_group", .adGroup), ("creative", .creative), ("conversion_type", .conversionType),
                 ("conversion_class", .conversionClass), ("interaction", .interaction), ("source_domain", .sourceDomain),
                 ("coarse_value_unsigned", .coarseValue), ("country_code_unsigned", .countryCode), ("currency", .currency),
                 ("ad_network_name", .adNetworkName), ("campaign_name", .campaignName), ("ad_group_name", .adGroupName),
                 ("creative_name", .creativeName), ("campaign_id", .campaignID), ("ad_group_id", .adGroupID),
                 ("creative_id", .creativeID)].map { ($0.0, Reading.text($0.1.place)) }
        plan += [("app", DeliveryField.app), ("conversion_window", .conversionWindow), ("fidelity_type", .fidelityType),
                 ("publisher_item_id", .publisherItemID), ("conversion_value_unsigned", .conversionValue)].map { ($0.0, Reading.integer($0.1.place)) }
        plan += [("did_win", DeliveryField.didWin), ("countable", .countable), ("redownload", .redownload)].map { ($0.0, Reading.flag($0.1.place)) }
        return plan.map { (columnPlaces[$0.0]!, $0.1) }
    }()

    private static func place(_ column: String) -> Int { columnPlaces[column]! }
    private static let (idPlace, receivedPlace, estimatedPlace, zonePlace, interactionPlace, minimumPlace, maximumPlace, costPlace) =
        (place("id"), place("received_at"), place("estimated_install_at"), place("time_zone"), place("interaction"), place("revenue_min_micros"),
         place("revenue_max_micros"), place("cost"))

    /// One row's postback id and facts, written from its cells as the JSON text bodies send; `zones` keeps the zones
    /// met so far.
    static func fact(_ row: SQLCells, zones: inout [String: TimeZone]) throws -> (Int64, DeliveryFacts) {
        func cell<T>(_ place: Int, _ body: (SQLCell) throws -> T) rethrows -> T {
            place < row.count ? try row.withCell(at: place, body) : try body(.null)
        }
        var fact = DeliveryFacts(capacity: 1024)
        for (place, reading) in readings {
            try cell(place) { value in
                switch (reading, value) {
                case (_, .null): return
                case (.text(let field), .text(let text)): fact.write(at: field) { JSONValue.writeString(utf8: text, into: &$0) }
                case (.integer(let field), _): if let number = value.wholeNumber { fact.write(at: field) { $0.append(contentsOf: String(number).utf8) } }
                case (.flag(let field), _): if let number = value.wholeNumber { fact.write(at: field) { $0.append(contentsOf: (number != 0 ? "true" : "false").utf8) } }
                default: throw SQLValueMismatch(column: "#\(place)", found: value.value, expected: "text")
                }
            }
        }
        try cell(receivedPlace) { value in
            guard case .text(let text) = value else { throw SQLValueMismatch(column: "received_at", found: value.value, expected: "text") }
            fact.write(at: DeliveryField.receivedAt.place) { JSONValue.writeString(utf8: text, into: &$0) }
            guard let moment = Timestamp.parse(utf8: text) else { return }
            let milliseconds = Int64((moment.timeIntervalSince1970 * 1000).rounded())
            fact.write(at: DeliveryField.receivedAtUnix.place) { $0.append(contentsOf: String(milliseconds / 1000).utf8) }
            fact.write(at: DeliveryField.receivedAtUnixMilliseconds.place) { $0.append(contentsOf: String(milliseconds).utf8) }
        }
        let estimated = cell(estimatedPlace) { value -> Date? in
            guard case .text(let text) = value else { return nil }
            fact.write(at: DeliveryField.estimatedInstallAt.place) { JSONValue.writeString(utf8: text, into: &$0) }
            return Timestamp.parse(utf8: text)
        }
        if let estimated {
            let zone = cell(zonePlace) { value -> TimeZone in
                guard case .text(let text) = value else { return Self.utc }
                let name = String(decoding: text, as: UTF8.self)
                if let known = zones[name] { return known }
                let found = TimeZone(identifier: name) ?? Self.utc
                zones[name] = found
                return found
            }
            fact.write(at: DeliveryField.installDay.place) { JSONValue.writeString(Self.day(estimated, in: zone), into: &$0) }
        }
        cell(interactionPlace) { value in
            guard case .text(let text) = value else { return }
            fact.write(at: DeliveryField.viewThrough.place) { $0.append(contentsOf: (text.elementsEqual("view".utf8) ? "true" : "false").utf8) }
        }
        if let minimum = cell(minimumPlace, \.wholeNumber), let maximum = cell(maximumPlace, \.wholeNumber) {
            fact.write(at: DeliveryField.revenueMin.place) { $0.append(contentsOf: Money.decimal(micros: minimum).utf8) }
            fact.write(at: DeliveryField.revenueMax.place) { $0.append(contentsOf: Money.decimal(micros: maximum).utf8) }
            fact.write(at: DeliveryField.revenueMid.place) { $0.append(contentsOf: Money.decimal(halfOfMicros: minimum + maximum).utf8) }
        }
        cell(costPlace) { value in
            // `<micros>:<currency>` (``costSQL(_:)``).
            guard case .text(let text) = value, let colon = text.firstIndex(of: UInt8(ascii: ":")), colon + 1 < text.count,
                  let micros = Int64(String(decoding: text[..<colon], as: UTF8.self)) else { return }
            fact.write(at: DeliveryField.costPerInstall.place) { $0.append(contentsOf: Money.decimal(micros: micros).utf8) }
            fact.write(at: DeliveryField.costCurrency.place) {
                JSONValue.writeString(utf8: UnsafeBufferPointer(rebasing: text[(colon + 1)...]), into: &$0)
            }
        }
        let id = cell(idPlace, \.wholeNumber)
        guard let id else { throw SQLValueMismatch(column: "id", found: cell(idPlace, \.value), expected: "Int64") }
        return (id, fact)
    }

    /// The zone of an app without one registered.
    private static let utc = TimeZone(identifier: "UTC")!

    /// `moment`'s day in `zone`, `YYYY-MM-DD`: the civil day of the moment moved by the zone's offset then, counted
    /// from the Unix epoch in whole days (Howard Hinnant's `civil_from_days`), without a calendar or a formatter.
    static func day(_ moment: Date, in zone: TimeZone) -> String {
        let local = Int64((moment.timeIntervalSince1970).rounded(.down)) + Int64(zone.secondsFromGMT(for: moment))
        let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func padded(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.utf8.count)) + text
        }
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
    }
}
