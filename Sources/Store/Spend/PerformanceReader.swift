import Foundation
import JWS
import Postback
import Spend

/// The performance report: installs and revenue Apple signed, beside the spend and claims networks reported, with the
/// ratios a growth team decides by (docs/metrics.md). Three grouped reads (verified postbacks, the networks' reports,
/// forgeries naming a network), streamed and added up in Swift as their rows arrive, so money stays exact and is never
/// added across currencies, and no read is held whole.
public struct PerformanceReader: Sendable {
    let engine: any DatabaseEngine

    /// The most groups one report served over HTTP adds up (`serve --performance-max-groups`): a group costs about 1 KB
    /// while it is added up, so a report holds at most about 50 MB whatever it asks (trust round 4, finding 5).
    public static let defaultMaximumGroups = 50_000

    /// A report that selects more groups than its cap: it was stopped at the first group past it.
    public struct TooManyGroups: Error, Sendable, Equatable {
        /// The cap.
        public let maximum: Int
    }

    /// One page of the report: its rows after a cursor, in order, and the cursor of the next page.
    public struct Page: Sendable {
        /// The page's rows, as ``PerformanceReader/report(_:maximumGroups:)`` makes them.
        public let table: ReportTable
        /// The dimension cells of the page's last row when more rows follow it; nil on the last page.
        public let next: [JSONValue]?
    }

    /// The report for `query`: its dimensions, then ``PerformanceMetric`` in order, and `currency`; every row. Throws
    /// ``TooManyGroups`` when it selects more than `maximumGroups` groups (nil: no cap, as the CLI reads).
    public func report(_ query: PerformanceQuery, maximumGroups: Int? = nil) async throws -> ReportTable {
        try await page(query, maximumGroups: maximumGroups, after: nil, limit: nil).table
    }

    /// At most `limit` rows of the report (nil: all), those whose dimension cells come after `after` in the report's
    /// order (``precedes(_:_:)``); the metric cells are made for the page's rows alone. Throws ``TooManyGroups`` as
    /// ``report(_:maximumGroups:)`` does: the cap counts every group of the report, whichever page is asked.
    public func page(_ query: PerformanceQuery, maximumGroups: Int?, after: [JSONValue]?, limit: Int?) async throws -> Page {
        let groups = try await self.groups(query, maximumGroups: maximumGroups)
        var ordered = groups.map { (cells: $0.key.map(ReportTable.cell), group: $0.value) }
        if let after { ordered.removeAll { !Self.precedes(after, $0.cells) } }
        ordered.sort { Self.precedes($0.cells, $1.cells) }
        let shown = min(limit ?? ordered.count, ordered.count)
        let now = query.asOf ?? Date()
        let rows = ordered[..<shown].map { row in
            let span = Self.span(query, firstDay: row.group.firstDay, now: now)
            let maturity = (0...2).map {
                WindowMaturity.of(window: $0, firstDayStart: span.start, lastDayEnd: span.end, now: now, installBasis: query.basis == .install)
            }
            return row.cells + row.group.cells(target: query.currency, maturity: maturity)
        }
        let table = ReportTable(columns: query.groupBy.map(\.rawValue) + ["currency"] + PerformanceMetric.allCases.map(\.rawValue), rows: rows,
                                timeZone: query.timeZone.identifier, dayBasis: query.basis)
        return Page(table: table, next: shown > 0 && shown < ordered.count ? ordered[shown - 1].cells : nil)
    }

    /// The instants a row's days begin and end (docs/metrics.md, "Maturity"): its day, its week within the report's
    /// period, else the period: from `from` (or the row's first day) to `to` (or the end of today), in the report's zone.
    static func span(_ query: PerformanceQuery, firstDay: String?, now: Date) -> (start: Date, end: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = query.timeZone.zone
        func start(_ day: String) -> Date? {
            let parts = day.split(separator: "-").compactMap { Int($0) }
            guard parts.count == 3 else { return nil }
            return calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))
        }
        func adding(_ days: Int, to date: Date) -> Date { calendar.date(byAdding: .day, value: days, to: date) ?? date }
        let today = start(query.day(now)) ?? now
        let first = firstDay.flatMap(start) ?? today
        let periodStart = query.from.flatMap { start(query.day($0)) }, periodEnd = query.to.flatMap { start(query.day($0)) }
        if query.groupBy.contains(.day) { return (first, adding(1, to: first)) }
        if query.groupBy.contains(.week) {
            // Calendar weekdays count from Sunday (1); ISO weeks start on Monday.
            let monday = adding(-((calendar.component(.weekday, from: first) + 5) % 7), to: first)
            return (max(monday, periodStart ?? monday), min(adding(7, to: monday), periodEnd ?? .distantFuture))
        }
        return (periodStart ?? first, periodEnd ?? adding(1, to: today))
    }

    /// Every group of `query` by its key (``GroupSums``), added up from the three reads as each row is read.
    func groups(_ query: PerformanceQuery, maximumGroups: Int?) async throws -> [[SQLValue]: PerformanceGroup] {
        let rates = query.currency == nil ? [] : try await SpendLedger(engine: engine).rates()
        let converter = CurrencyConverter(target: query.currency, rates: rates)
        // Each read's columns: the dimensions (d0, d1, ...), rate_day, then the read's own (its SQL below).
        let day = query.groupBy.count
        var sums = GroupSums(dimensions: day, maximum: maximumGroups ?? .max)
        let verified = Self.verifiedSQL(query, engine.dialect)
        sums = try await engine.readRows(verified.sql, verified.arguments, reuse: .once, into: sums) { sums, cells in
            // rate_day, currency, the counts (``PerformanceGroup/countColumns``), revenue_0 to revenue_7.
            let row = SQLRow(columns: [], values: cells.values)
            let currency = try row.get(at: day + 1, as: String.self)
            let rateDay = try row.get(at: day, as: String.self)
            let countsStart = day + 2, revenueStart = day + 2 + PerformanceGroup.countColumns.count
            let counts = try PerformanceGroup.countColumns.indices.map { try row.get(at: countsStart + $0, as: Int64.self) }
            let revenue = try (0..<PerformanceGroup.revenueColumns).map { try row.get(at: revenueStart + $0, as: Int64.self) }
            try sums.add(row.values) { group in
                group.saw(day: rateDay)
                group.add(counts: counts)
                guard !currency.isEmpty, revenue.contains(where: { $0 != 0 }) else { return }
                group.addRevenue(revenue, currency: currency, day: rateDay, converter: converter)
            }
        }
        let spend = Self.spendSQL(query, engine.dialect)
        sums = try await engine.readRows(spend.sql, spend.arguments, reuse: .once, into: sums) { sums, cells in
            // rate_day, currency, spend_micros, claimed_installs, claimed_re_engagements, impressions, clicks.
            let row = SQLRow(columns: [], values: cells.values)
            let currency = try row.get(at: day + 1, as: String?.self)
            let rateDay = try row.get(at: day, as: String.self)
            try sums.add(row.values) { group in
                group.saw(day: rateDay)
                group.addClaims(installs: try? row.get(at: day + 3, as: Int64?.self), reEngagements: try? row.get(at: day + 4, as: Int64?.self),
                                impressions: try? row.get(at: day + 5, as: Int64?.self), clicks: try? row.get(at: day + 6, as: Int64?.self))
                if let currency, let micros = try? row.get(at: day + 2, as: Int64?.self) {
                    group.addSpend(micros, currency: currency, day: rateDay, converter: converter)
                }
            }
        }
        let forged = Self.forgedSQL(query, engine.dialect)
        sums = try await engine.readRows(forged.sql, forged.arguments, reuse: .once, into: sums) { sums, cells in
            // rate_day, forged.
            let row = SQLRow(columns: [], values: cells.values)
            let count = try row.get(at: day + 1, as: Int64.self)
            let rateDay = try row.get(at: day, as: String.self)
            try sums.add(row.values) { group in
                group.saw(day: rateDay)
                group.forged += count
            }
        }
        return sums.groups
    }

    /// The groups of a report while its reads stream, by the values of their dimensions as one report cell each
    /// (``key(_:)``); never more than `maximum`.
    struct GroupSums: Sendable {
        var groups: [[SQLValue]: PerformanceGroup] = [:]
        let dimensions: Int
        let maximum: Int

        /// Adds a row whose first cells are the dimensions to its group with `body`; throws ``TooManyGroups`` when the
        /// row starts a group past the cap.
        mutating func add(_ values: [SQLValue], _ body: (inout PerformanceGroup) throws -> Void) throws {
            try body(&groups[values[..<dimensions].map(PerformanceReader.key), default: PerformanceGroup()])
            if groups.count > maximum { throw TooManyGroups(maximum: maximum) }
        }
    }

    /// A dimension's value as part of a group's key: values that are one cell of the report (``ReportTable/cell(_:)``)
    /// are one key: a whole double is its integer, bytes are their base64 text.
    static func key(_ value: SQLValue) -> SQLValue {
        switch value {
        case .real(let real) where real == real.rounded() && abs(real) < 1e15: .integer(Int64(real))
        case .blob(let bytes): .text(Base64.encode(bytes, alphabet: .standard))
        default: value
        }
    }

    /// Rows in order of their dimensions: numbers as numbers, text as text, empty first.
    static func precedes(_ left: [JSONValue], _ right: [JSONValue]) -> Bool {
        for (a, b) in zip(left, right) where a != b {
            switch (a, b) {
            case (.null, _): return true
            case (_, .null): return false
            case (.number(let x), .number(let y)):
                // Whole numbers (app ids of up to 18 digits) compare exactly; numbers that are equal as written
                // apart are ordered by their text, so the order is total and a page's cursor never skips a row.
                if let x = Int64(x), let y = Int64(y), x != y { return x < y }
                if let x = Double(x), let y = Double(y), x != y { return x < y }
                return x < y
            default: return a.serialized < b.serialized
            }
        }
        return false
    }

    // MARK: SQL

    /// The day expression over a UTC timestamp column, in the query's zone.
    static func day(_ timestamp: String, _ query: PerformanceQuery, _ dialect: SQLDialect, shiftedBack: Int = 0) -> String {
        query.timeZone.isUTC ? "substr(\(timestamp), 1, 10)"
            : query.timeZone.day(of: timestamp, from: query.from?.addingTimeInterval(-Double(shiftedBack) * 3600 - 41 * 86_400), to: query.to, dialect: dialect)
    }

    /// The grouping expressions for `columns`, in the query's order, then the day the amounts are converted at.
    static func select(_ query: PerformanceQuery, day: String, app: String, appName: String, adNetwork: String, campaign: String, country: String,
                       conversionType: String = "''", _ dialect: SQLDialect) -> [String] {
        query.groupBy.map { dimension in
            switch dimension {
            case .day: day
            case .week: dialect.isoWeek(day)
            case .app: app
            case .appName: appName
            case .adNetwork: adNetwork
            case .adNetworkName: "coalesce(an.name, \(ReportQuery.Dimension.builtIn(NameRegistry.builtInAdNetworks, of: adNetwork)), \(adNetwork))"
            case .campaign: campaign
            case .country: country
            case .conversionType: conversionType
            }
        } + [day]
    }

    /// `WHERE` conditions on the day and the filters, over one source's columns.
    static func filters(_ query: PerformanceQuery, day: String, app: String, adNetwork: String, campaign: String, country: String) -> (sql: [String], arguments: [any SQLValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any SQLValueConvertible] = []
        if let from = query.from { conditions.append("\(day) >= ?"); arguments.append(query.day(from)) }
        if let to = query.to { conditions.append("\(day) < ?"); arguments.append(query.day(to)) }
        if let value = query.app { conditions.append("\(app) = ?"); arguments.append(value) }
        if let value = query.adNetwork { conditions.append("\(adNetwork) = ?"); arguments.append(value) }
        if let value = query.campaign { conditions.append("\(campaign) = ?"); arguments.append(value) }
        if let value = query.country { conditions.append("\(country) = ?"); arguments.append(value) }
        return (conditions, arguments)
    }

    static func grouped(_ selected: [String]) -> String {
        "GROUP BY " + (1...selected.count).map(String.init).joined(separator: ", ")
    }

    static func joins(_ query: PerformanceQuery, adNetwork: String) -> String {
        query.groupBy.contains(.adNetworkName) ? " LEFT JOIN ad_networks an ON an.ad_network_id = \(adNetwork)" : ""
    }

    /// Postbacks of every outcome, summed per group, day and currency.
    static func verifiedSQL(_ query: PerformanceQuery, _ dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        let day = Self.day(query.basis == .install ? "c.estimated_install_at" : "c.received_at", query, dialect)
        // A campaign is the network's own id where a dated mapping names the postback, as its spend file numbers it.
        let mapped = query.groupBy.contains(.campaign) || query.campaign != nil
        let campaign = mapped ? "CASE WHEN sm.id IS NOT NULL THEN sm.campaign_id ELSE coalesce(c.campaign, '') END" : "coalesce(c.campaign, '')"
        let selected = select(query, day: day, app: "c.app", appName: "c.app_name", adNetwork: "c.ad_network_id", campaign: campaign,
                              country: "coalesce(c.country_code_unsigned, '')", conversionType: "coalesce(c.conversion_type, '')", dialect)
        let (conditions, arguments) = filters(query, day: day, app: "c.app", adNetwork: "c.ad_network_id", campaign: campaign,
                                              country: "coalesce(c.country_code_unsigned, '')")
        let install = "c.did_win = 1 AND c.conversion_window = 0 AND c.conversion_class = 'install'"
        let installs = "c.countable = 1 AND \(install)"
        let value = "(c.conversion_value_unsigned IS NOT NULL OR c.coarse_value_unsigned IS NOT NULL)"
        func count(_ condition: String) -> String { "sum(CASE WHEN \(condition) THEN 1 ELSE 0 END)" }
        var measures = [
            "\(count(installs)) AS installs",
            "\(count("c.countable = 1 AND c.did_win = 1 AND c.conversion_window = 0 AND c.conversion_class = 're-engagement'")) AS re_engagements",
            "\(count("\(installs) AND \(value)")) AS installs_with_value",
        ]
        for tier in 0...3 {
            measures.append("\(count("\(installs) AND c.tier_min = \(tier)")) AS tier_\(tier)")
            measures.append("\(count("\(installs) AND c.tier_min = \(tier) AND \(value)")) AS tier_value_\(tier)")
        }
        measures += [
            "\(count("c.outcome = 'unverifiable' AND \(install)")) AS not_counted_unverifiable",
            "\(count("c.outcome = 'verified' AND c.environment = 'development' AND \(install)")) AS not_counted_development",
            "\(count("c.outcome = 'verified' AND c.environment = 'production' AND c.countable = 0 AND \(install)")) AS not_counted_policy",
            // Copies only where Apple's signature proves the network: an unverifiable row's network is only claimed, and
            // anyone can resend its body (trust round 4, finding 11).
            "sum(CASE WHEN c.outcome = 'verified' AND \(install) THEN c.duplicates + c.replays ELSE 0 END) AS copies",
        ]
        // Acquisition revenue from install postbacks only, by window; re-engagements' revenue apart (issue 49, finding 1).
        for window in 0...2 {
            let condition = "c.countable = 1 AND c.conversion_class = 'install' AND c.conversion_window = \(window)"
            measures.append("sum(CASE WHEN \(condition) THEN coalesce(c.revenue_min_micros, 0) ELSE 0 END) AS revenue_\(window * 2)")
            measures.append("sum(CASE WHEN \(condition) THEN coalesce(c.revenue_max_micros, 0) ELSE 0 END) AS revenue_\(window * 2 + 1)")
        }
        measures.append("sum(CASE WHEN c.countable = 1 AND c.conversion_class = 're-engagement' THEN coalesce(c.revenue_min_micros, 0) ELSE 0 END) AS revenue_6")
        measures.append("sum(CASE WHEN c.countable = 1 AND c.conversion_class = 're-engagement' THEN coalesce(c.revenue_max_micros, 0) ELSE 0 END) AS revenue_7")
        let columns = selected.enumerated().map { index, expression in "\(expression) AS \(index == selected.count - 1 ? "rate_day" : "d\(index)")" }
        let sql = "SELECT \(columns.joined(separator: ", ")), coalesce(c.currency, '') AS currency, \(measures.joined(separator: ", ")) FROM conversions c"
            + joins(query, adNetwork: "c.ad_network_id") + (mapped ? ReportQuery.Dimension.mappingJoin : "") + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
            + " " + grouped(selected + ["coalesce(c.currency, '')"])
        return (sql, arguments)
    }

    /// The networks' reports, summed per group, day and currency.
    static func spendSQL(_ query: PerformanceQuery, _ dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        let selected = select(query, day: "s.day", app: "s.app", appName: "coalesce(ap.name, CAST(s.app AS TEXT))", adNetwork: "s.ad_network_id",
                              campaign: "s.campaign", country: "s.country", dialect)
        let (conditions, arguments) = filters(query, day: "s.day", app: "s.app", adNetwork: "s.ad_network_id", campaign: "s.campaign", country: "s.country")
        let columns = selected.enumerated().map { index, expression in "\(expression) AS \(index == selected.count - 1 ? "rate_day" : "d\(index)")" }
        let sql = "SELECT \(columns.joined(separator: ", ")), s.currency, sum(s.spend_micros) AS spend_micros, sum(s.claimed_installs) AS claimed_installs, "
            + "sum(s.claimed_re_engagements) AS claimed_re_engagements, sum(s.impressions) AS impressions, sum(s.clicks) AS clicks "
            + "FROM spend s JOIN spend_current sc ON sc.day = s.day AND sc.app = s.app AND sc.ad_network_id = s.ad_network_id AND sc.import_id = s.import_id "
            + "LEFT JOIN apps ap ON ap.app = s.app" + joins(query, adNetwork: "s.ad_network_id")
            + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")) + " " + grouped(selected + ["s.currency"])
        return (sql, arguments)
    }

    /// Bodies that failed verification but name a network and app: refused ones by their receipts, and stored ones
    /// `reverify` found forged. On the install basis a forgery's day is its arrival less a first window's delay.
    static func forgedSQL(_ query: PerformanceQuery, _ dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        let shifted = query.basis == .install ? dialect.timestamp("f.received_at", hoursBack: 84) : "f.received_at"
        let day = Self.day(shifted, query, dialect, shiftedBack: 84)
        let selected = select(query, day: day, app: "f.app", appName: "coalesce(ap.name, CAST(f.app AS TEXT))", adNetwork: "f.ad_network_id",
                              campaign: "f.campaign", country: "''", dialect)
        let (conditions, arguments) = filters(query, day: day, app: "f.app", adNetwork: "f.ad_network_id", campaign: "f.campaign", country: "''")
        let source = """
            (SELECT r.received_at, r.claimed_app AS app, r.claimed_ad_network AS ad_network_id, coalesce(substr(r.claimed_source, 1, 2), '') AS campaign
             FROM receipts r WHERE r.disposition = 'rejected' AND r.outcome = 'invalid' AND r.claimed_app IS NOT NULL AND r.claimed_ad_network IS NOT NULL
             UNION ALL
             SELECT p.received_at, p.advertised_item_id, p.ad_network_id, coalesce(substr(p.source_digits, 1, 2), '')
             FROM postbacks p WHERE p.outcome = 'invalid')
            """
        let columns: String = selected.enumerated().map { index, expression in "\(expression) AS \(index == selected.count - 1 ? "rate_day" : "d\(index)")" }
            .joined(separator: ", ")
        let filter: String = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let head: String = "SELECT \(columns), count(*) AS forged FROM \(source) f LEFT JOIN apps ap ON ap.app = f.app"
        let sql: String = head + joins(query, adNetwork: "f.ad_network_id") + filter + " " + grouped(selected)
        return (sql, arguments)
    }
}
