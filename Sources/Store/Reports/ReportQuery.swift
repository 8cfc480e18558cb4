import Foundation
import JWS
import Postback

/// A report request: filters, grouping and output, validated against closed lists so no caller text reaches SQL.
public struct ReportQuery: Sendable, Equatable {
    /// A grouping dimension and the SQL expression it reads.
    public enum Dimension: String, Sendable, CaseIterable {
        case day, week, installDay = "install_day", app, appName = "app_name", adNetwork = "ad_network", adNetworkName = "ad_network_name"
        case `protocol`, version
        case environment, campaign
        case adGroup = "ad_group", creative
        case sourceIdentifier = "source_identifier", conversionType = "conversion_type", conversionClass = "conversion_class"
        case window, didWin = "did_win", interaction, fidelity, country, tier, event, publisher
        case campaignName = "campaign_name", adGroupName = "ad_group_name", creativeName = "creative_name"
        /// The revenue's currency (ISO 4217, from the app's schema); every report is grouped by it.
        case currency
        /// The schema revision that decoded the postback (empty when no schema did).
        case schemaRevision = "schema_revision"
        /// What decoding made of the postback: `decoded`, `no_event` (the schema defines the value as no event), `undefined_value` (the schema does not define the value),
        /// `no_value`, `no_schema`, or why decoding failed (`no_version_in_force`, `class_not_defined`, ...).
        case decoding
        /// Which conversion value the postback carries (unsigned): `fine`, `coarse` or `none`.
        case valueKind = "value_kind"
        /// The fine value (0-63) or the coarse level (`low`, `medium`, `high`); empty when none (unsigned).
        case value

        /// What the dimension's values are, in words an analyst uses (docs/metrics.md, the OpenAPI document and
        /// `countersign report --help` show the same text).
        public var definition: String {
            switch self {
            case .day: "The day the postback arrived, in the report's time zone (tz; an app's registered zone when the report names the app, else UTC)."
            case .week: "The ISO 8601 week of that day, such as 2026-W48."
            case .installDay: "The estimated day of the install (or re-engagement) the postback reports, in the report's time zone: the arrival time less Apple's typical delay for its protocol, version and window (docs/metrics.md). An estimate, within days of the truth; use it for cohorts."
            case .app: "The advertised app's App Store id."
            case .appName: "The app's name in the app registry, else its id."
            case .adNetwork: "The ad network id Apple signed."
            case .adNetworkName: "The ad network's name from the registry (Apple Ads for com.apple.ads), else its id."
            case .protocol: "aak (AdAttributionKit) or skan (SKAdNetwork)."
            case .version: "The SKAdNetwork version (1.0 to 4.0); empty for AdAttributionKit."
            case .environment: "production or development (the Apple key that signed it)."
            case .campaign: "Digits 1-2 of the source identifier, or SKAdNetwork's campaign-id before 4.0."
            case .adGroup: "Digit 3 of the source identifier, when Apple sent three or more."
            case .creative: "Digit 4 of the source identifier, when Apple sent four."
            case .sourceIdentifier: "The whole source identifier (2 to 4 digits), or the campaign-id before SKAdNetwork 4.0."
            case .conversionType: "download, redownload or re-engagement, as Apple signed it."
            case .conversionClass: "install (download or redownload) or re-engagement."
            case .window: "The conversion window: 0 (days 0-2 after first launch), 1 (days 3-7), 2 (days 8-35)."
            case .didWin: "1 for the winning network's postback, 0 for a non-winning one."
            case .interaction: "click or view: AdAttributionKit's unsigned ad-interaction-type, or SKAdNetwork's signed fidelity-type."
            case .fidelity: "SKAdNetwork's signed fidelity-type: 1 a StoreKit-rendered ad or click, 0 a view-through; empty for AdAttributionKit."
            case .country: "The unsigned country-code (ISO 3166 two letters); empty when Apple did not send one (see share_with_country)."
            case .tier: "The lowest crowd-anonymity tier (0 to 3) the postback's fields allow."
            case .event: "A business event the app's schema gives the conversion value; postbacks with none are grouped under (no event)."
            case .publisher: "The app (its id) or web domain that showed the ad."
            case .campaignName: "The campaign's name: the dated mapping's in force on the postback's estimated install day (its name, else its campaign id), else the name given for the app and ad network (countersign names), else the schema's, else Apple Ads' placement, else the digits."
            case .adGroupName: "The ad group's name, found as campaign_name is."
            case .creativeName: "The creative's name, found as campaign_name is."
            case .currency: "The ISO 4217 currency of the row's revenue (the app schema's); every report is grouped by it, so no row adds two currencies."
            case .schemaRevision: "The schema revision that decoded the postback; empty when no schema did."
            case .decoding: "What decoding made of the postback: decoded, no_event (the schema defines the value as no event), undefined_value (the schema does not define the value), no_value, no_schema, or why decoding failed."
            case .valueKind: "Which conversion value the postback carries (unsigned): fine, coarse or none."
            case .value: "The fine value (0 to 63) or the coarse level (low, medium, high); empty when none (unsigned)."
            }
        }

        /// Whether the dimension's values are text (the others are integers).
        var isText: Bool { ![.app, .window, .didWin, .tier, .fidelity, .schemaRevision].contains(self) }

        /// Whether `conversion_rollup` holds this dimension; the others are read from the rows.
        var inRollup: Bool {
            ![.event, .publisher, .fidelity, .campaignName, .adGroupName, .creativeName, .schemaRevision, .decoding, .valueKind, .value,
              .version, .installDay].contains(self)
        }

        /// The SQL for this dimension over `columns` in `dialect`; nil when `columns` (the rollup) does not hold it.
        func expression(_ columns: ReportColumns, _ dialect: SQLDialect) -> String? {
            if columns.isRollup, !inRollup { return nil }
            return switch self {
            case .day: columns.day
            case .week: dialect.isoWeek(columns.day)
            case .installDay: columns.installDay
            case .app: columns.app
            // The registry's name for the app, else its id.
            case .appName: "coalesce(ap.name, CAST(\(columns.app) AS TEXT))"
            // The SKAdNetwork version (AdAttributionKit postbacks have none).
            case .version: "c.version"
            case .adNetwork: columns.adNetwork
            // The registry's name, Apple Ads' own, else the id.
            case .adNetworkName: "coalesce(an.name, \(Self.builtIn(NameRegistry.builtInAdNetworks, of: columns.adNetwork)), \(columns.adNetwork))"
            case .protocol: columns.family
            case .environment: columns.environment
            case .campaign: "substr(\(columns.source), 1, 2)"
            case .adGroup: "CASE WHEN \(columns.digitCount) >= 3 THEN substr(\(columns.source), 3, 1) END"
            case .creative: "CASE WHEN \(columns.digitCount) >= 4 THEN substr(\(columns.source), 4, 1) END"
            case .sourceIdentifier: columns.source
            case .conversionType: columns.conversionType
            case .conversionClass: columns.conversionClass
            case .window: columns.window
            case .didWin: columns.didWin
            case .interaction: columns.interaction
            // SKAdNetwork's signed fidelity-type (1 StoreKit-rendered ad or click, 0 view-through); null for AAK.
            case .fidelity: "c.fidelity_type"
            case .country: columns.country
            case .currency: columns.currency
            case .tier: columns.tier
            // A postback its schema gives no event (or with no schema) is grouped under "(no event)".
            case .event: "coalesce(e.name, '(no event)')"
            case .schemaRevision: "c.schema_revision"
            case .decoding:
                "CASE WHEN c.decode_status IS NULL THEN 'no_schema' WHEN c.decode_status <> 'decoded' THEN c.decode_status"
                    + " WHEN c.event_count > 0 THEN 'decoded' WHEN \(Self.noValue) THEN 'no_value' ELSE 'undefined_value' END"
            case .valueKind: "CASE WHEN c.conversion_value_unsigned IS NOT NULL THEN 'fine' WHEN c.coarse_value_unsigned IS NOT NULL THEN 'coarse' ELSE 'none' END"
            case .value: "coalesce(CAST(c.conversion_value_unsigned AS TEXT), c.coarse_value_unsigned)"
            // The app that showed the ad (AAK publisher-item-identifier, SKAN source-app-id) or the web ad's domain.
            case .publisher: "coalesce(CAST(c.publisher_item_id AS TEXT), c.source_domain)"
            // The dated mapping's name in force (else its id), else a name given for the app and ad network, else the
            // schema's (its network's, else the app's), else Apple Ads' placement, else the digits: never a blank row.
            case .campaignName:
                "CASE WHEN sm.id IS NOT NULL THEN coalesce(sm.campaign_name, sm.campaign_id) ELSE coalesce(sn_campaign.name, \(dialect.jsonArrayElementMember("c.source_levels", index: 0, key: "name")), "
                    + "CASE WHEN c.ad_network_id = 'com.apple.ads' AND c.protocol = 'skan' THEN \(Self.builtIn(NameRegistry.appleAdsPlacements, of: "c.campaign")) END, c.campaign) END"
            case .adGroupName: Self.mapped("ad_group", digits: "c.ad_group", otherwise: "coalesce(sn_ad_group.name, \(dialect.jsonArrayElementMember("c.source_levels", index: 1, key: "name")), c.ad_group)")
            case .creativeName: Self.mapped("creative", digits: "c.creative", otherwise: "coalesce(sn_creative.name, \(dialect.jsonArrayElementMember("c.source_levels", index: 2, key: "name")), c.creative)")
            }
        }

        /// The join that finds the dated mapping (``SourceMapping``) naming the row's postback, as `sm`: of its app and ad
        /// network; whose identifier is the postback's, or (AdAttributionKit and SKAdNetwork 4, whose identifiers are
        /// hierarchical) its first 2 or 3 digits; in force on the UTC day of its estimated install; in its country and
        /// for its publisher when the mapping names them. The longest identifier wins, then one naming a country, then
        /// one naming a publisher, then the latest start. Chosen once per row, whatever reads its columns.
        static let mappingJoin: String = {
            let day = "substr(c.estimated_install_at, 1, 10)"
            // Most apps and networks have no mapping: one probe of the index says so, before the lookup and its sort.
            return " LEFT JOIN source_mappings sm ON sm.id = CASE WHEN EXISTS (SELECT 1 FROM source_mappings m0 WHERE m0.app = c.app AND m0.ad_network_id = c.ad_network_id)"
                + " THEN (SELECT m.id FROM source_mappings m WHERE m.app = c.app AND m.ad_network_id = c.ad_network_id"
                + " AND m.source_identifier IN (c.source_identifier, substr(c.source_identifier, 1, 2), substr(c.source_identifier, 1, 3))"
                + " AND (m.source_identifier = c.source_identifier OR c.protocol = 'aak' OR c.version LIKE '4.%')"
                + " AND m.valid_from <= \(day) AND (m.valid_to IS NULL OR m.valid_to >= \(day))"
                + " AND (m.country IS NULL OR m.country = c.country_code_unsigned)"
                + " AND (m.publisher IS NULL OR m.publisher = lower(coalesce(CAST(c.publisher_item_id AS TEXT), c.source_domain)))"
                + " ORDER BY length(m.source_identifier) DESC, m.country IS NULL, m.publisher IS NULL, m.valid_from DESC, m.id DESC LIMIT 1) END"
        }()

        /// `value` at `level` when a mapping names the postback (its own value, else its id, else the digits: never a
        /// name of the identifier's other campaigns), else `otherwise`.
        static func mapped(_ level: String, digits: String, otherwise: String) -> String {
            "CASE WHEN sm.id IS NOT NULL THEN coalesce(sm.\(level)_name, sm.\(level)_id, \(digits)) ELSE \(otherwise) END"
        }

        /// A postback with neither a fine nor a coarse value.
        static let noValue = "c.conversion_value_unsigned IS NULL AND c.coarse_value_unsigned IS NULL"

        /// `CASE value WHEN key THEN name ... END` over names this code holds (never caller text).
        static func builtIn(_ names: [String: String], of value: String) -> String {
            "CASE \(value)" + names.sorted { $0.key < $1.key }.map { " WHEN '\($0.key)' THEN '\($0.value)'" }.joined() + " END"
        }

        /// The joins `dimensions` read, each once, in order.
        static func joins(_ dimensions: [Dimension], _ columns: ReportColumns) -> String {
            var seen: Set<String> = []
            return dimensions.flatMap { $0.joins(columns) }.filter { seen.insert($0).inserted }.joined()
        }

        /// The joins this dimension's expression reads.
        func joins(_ columns: ReportColumns) -> [String] {
            switch self {
            case .adNetworkName: [" LEFT JOIN ad_networks an ON an.ad_network_id = \(columns.adNetwork)"]
            case .appName: [" LEFT JOIN apps ap ON ap.app = \(columns.app)"]
            case .campaignName: [Self.nameJoin(.campaign, digits: "c.campaign"), Self.mappingJoin]
            case .adGroupName: [Self.nameJoin(.adGroup, digits: "c.ad_group"), Self.mappingJoin]
            case .creativeName: [Self.nameJoin(.creative, digits: "c.creative"), Self.mappingJoin]
            default: []
            }
        }

        private static func nameJoin(_ level: NameRegistry.Level, digits: String) -> String {
            let alias = "sn_\(level.rawValue)"
            return " LEFT JOIN source_names \(alias) ON \(alias).app = c.app AND \(alias).ad_network_id = c.ad_network_id"
                + " AND \(alias).level = '\(level.rawValue)' AND \(alias).digits = \(digits)"
        }

    }

    public var from: Date?
    public var to: Date?
    public var app: AppID?
    public var adNetwork: String?
    public var sourcePrefix: String?
    /// `download`, `redownload`, `re-engagement` (either spelling), or the classes `install` / `re-engagement`.
    public var conversionType: String?
    public var window: Int?
    public var didWin: Bool?
    public var interaction: String?
    public var country: String?
    public var environment: String?
    /// Postbacks whose lowest possible tier is this.
    public var tier: Int?
    public var family: PostbackProtocol?
    /// Postbacks whose revenue is in this currency (ISO 4217).
    public var currency: String?
    /// The zone of `day` and `week` buckets and of dates and times given without a zone.
    public var timeZone = ReportTimeZone.utc
    /// Which day `from`, `to`, `day` and `week` are of: the postback's arrival (the default) or its estimated install.
    public var basis = DayBasis.arrival
    /// Include postbacks that do not count (unverifiable, development); by default only counted ones are reported.
    public var includeUncounted = false
    public var groupBy: [Dimension] = []

    public init() {}



    /// The WHERE clause over `columns` and its bound arguments.
    func whereClause(_ columns: ReportColumns = .rows) -> (sql: String, arguments: [any SQLValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any SQLValueConvertible] = []
        if !includeUncounted { conditions.append("\(columns.countable) = 1") }
        if columns.isRollup {
            if let from { conditions.append("\(columns.day) >= ?"); arguments.append(String(Timestamp.format(from).prefix(10))) }
            if let to { conditions.append("\(columns.day) < ?"); arguments.append(String(Timestamp.format(to).prefix(10))) }
        } else if basis == .install {
            // An estimated install is at most 41 days before its postback arrived: arrival bounds the rows an index finds.
            if let from {
                conditions.append("c.received_at >= ? AND c.estimated_install_at >= ?")
                arguments += [Timestamp.format(from), Timestamp.format(from)]
            }
            if let to {
                conditions.append("c.received_at < ? AND c.estimated_install_at < ?")
                arguments += [Timestamp.format(to.addingTimeInterval(41 * 86_400)), Timestamp.format(to)]
            }
        } else {
            if let from { conditions.append("c.received_at >= ?"); arguments.append(Timestamp.format(from)) }
            if let to { conditions.append("c.received_at < ?"); arguments.append(Timestamp.format(to)) }
        }
        if let app { conditions.append("\(columns.app) = ?"); arguments.append(app) }
        if let adNetwork { conditions.append("\(columns.adNetwork) = ?"); arguments.append(adNetwork) }
        if let sourcePrefix { conditions.append("substr(\(columns.source), 1, \(sourcePrefix.count)) = ?"); arguments.append(sourcePrefix) }
        switch conversionType {
        case "install": conditions.append("\(columns.conversionClass) = 'install'")
        case "re-engagement", "reengagement": conditions.append("\(columns.conversionClass) = 're-engagement'")
        case let type?: conditions.append("\(columns.conversionType) = ?"); arguments.append(type)
        case nil: break
        }
        if let window { conditions.append("\(columns.window) = ?"); arguments.append(window) }
        if let didWin { conditions.append("\(columns.didWin) = ?"); arguments.append(didWin) }
        if let interaction { conditions.append("\(columns.interaction) = ?"); arguments.append(interaction) }
        if let country { conditions.append("\(columns.country) = ?"); arguments.append(country) }
        if let environment { conditions.append("\(columns.environment) = ?"); arguments.append(environment) }
        if let tier { conditions.append("\(columns.tier) = ?"); arguments.append(tier) }
        if let family { conditions.append("\(columns.family) = ?"); arguments.append(family.rawValue) }
        if let currency { conditions.append("\(columns.currency) = ?"); arguments.append(currency) }
        return (conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "), arguments)
    }

    /// The dimensions a report groups by: those asked for, then `currency` unless asked for already, so no row adds
    /// amounts in two currencies.
    public var grouping: [Dimension] {
        groupBy.contains(.currency) ? groupBy : groupBy + [.currency]
    }

    /// Whether `conversion_rollup` can answer this query exactly: days of arrival, every dimension a rollup column, days
    /// that are UTC days, and a time range on whole UTC days (the rollup's grain).
    public var rollupAnswers: Bool {
        func isMidnight(_ date: Date?) -> Bool { date.map { Timestamp.format($0).hasSuffix("T00:00:00.000Z") } ?? true }
        return basis == .arrival && groupBy.allSatisfy(\.inRollup) && isMidnight(from) && isMidnight(to) && (timeZone.isUTC || !groupBy.contains { $0 == .day || $0 == .week })
    }

    /// The metrics every report row carries, in order (``ReportMetric``); `revenue_*` are exact decimals in the row's
    /// `currency`.
    public static let metrics = ReportMetric.allCases.map(\.rawValue)

    /// The report SQL: one row per group with `metrics`, from the rollup when it can answer, else from the rows.
    func sql(forceRows: Bool = false, dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        !forceRows && rollupAnswers ? rollupSQL(dialect) : rowsSQL(dialect)
    }

    private func groupAndOrder(_ columns: ReportColumns, _ dialect: SQLDialect) -> (select: [String], tail: String) {
        let grouping = grouping
        let expressions = grouping.map { $0.expression(columns, dialect)! }
        let select = zip(grouping, expressions).map { "\($1) AS \"\($0.rawValue)\"" }
        let positions = (1...grouping.count).map(String.init).joined(separator: ", ")
        let order = zip(grouping, expressions).enumerated().map { index, pair in
            dialect.orderTerm(pair.1, position: index + 1, isText: pair.0.isText)
        }
        return (select, " GROUP BY \(positions)\(columns.isRollup ? " HAVING sum(r.postbacks) <> 0" : "") ORDER BY \(order.joined(separator: ", "))")
    }

    /// Which postbacks a counting metric counts, over a source whose columns have the prefix `p` (`r.` or `c.`); nil
    /// for every postback in scope.
    static func condition(_ metric: ReportMetric, _ p: String) -> String? {
        let counted = "\(p)countable = 1"
        let first = "\(p)did_win = 1 AND \(p)conversion_window = 0"
        return switch metric {
        case .counted: counted
        case .installs: "\(counted) AND \(first) AND \(p)conversion_class = 'install'"
        case .reEngagements: "\(counted) AND \(first) AND \(p)conversion_class = 're-engagement'"
        case .installPostbacks: "\(p)conversion_class = 'install'"
        case .reEngagementPostbacks: "\(p)conversion_class = 're-engagement'"
        case .winning: "\(p)did_win = 1"
        case .nonWinning: "\(p)did_win = 0"
        default: nil
        }
    }

    /// The metric columns in ``ReportMetric`` order, from one source's expressions; revenue expressions are whole
    /// millionths, summed as integers (`revenue_mid` is sent as min + max and halved when read).
    private static func metricColumns(
        _ prefix: String, count: (String?) -> String, events: String, revenueMin: String, revenueMax: String,
        shareWithoutValue: String, shareWithValue: String, shareWithCountry: String, duplicates: String, replays: String
    ) -> [String] {
        ReportMetric.allCases.map { metric in
            let expression: String = switch metric {
            case .events: events
            case .revenueMin: "coalesce(sum(\(revenueMin)), 0)"
            case .revenueMax: "coalesce(sum(\(revenueMax)), 0)"
            case .revenueMid: "coalesce(sum(\(revenueMin) + \(revenueMax)), 0)"
            case .shareWithoutValue: shareWithoutValue
            case .shareWithUnsignedValue: shareWithValue
            case .shareWithCountry: shareWithCountry
            case .duplicates: duplicates
            case .replays: replays
            default: count(condition(metric, prefix))
            }
            return "\(expression) AS \(metric.rawValue)"
        }
    }

    private func rollupSQL(_ dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        let columns = ReportColumns.rollup
        let (whereSQL, arguments) = whereClause(columns)
        let (grouping, tail) = groupAndOrder(columns, dialect)
        let metrics = Self.metricColumns("r.",
            count: { condition in
                condition.map { "coalesce(sum(CASE WHEN \($0) THEN r.postbacks ELSE 0 END), 0)" } ?? "coalesce(sum(r.postbacks), 0)"
            },
            events: "coalesce(sum(r.events), 0)", revenueMin: "r.revenue_min_micros", revenueMax: "r.revenue_max_micros",
            shareWithoutValue: dialect.round("sum(r.without_value) * 1.0 / sum(r.postbacks)", 4),
            shareWithValue: dialect.round("sum(r.postbacks - r.without_value) * 1.0 / sum(r.postbacks)", 4),
            shareWithCountry: dialect.round("sum(CASE WHEN r.country <> '' THEN r.postbacks ELSE 0 END) * 1.0 / sum(r.postbacks)", 4),
            duplicates: "sum(r.duplicates)", replays: "sum(r.replays)")
        let joins = Dimension.joins(self.grouping, columns)
        let sql = "SELECT " + (grouping + metrics).joined(separator: ", ") + " FROM conversion_rollup_live r" + joins + " " + whereSQL + tail
        return (sql, arguments)
    }

    private func rowsSQL(_ dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        var columns = ReportColumns.rows
        if !timeZone.isUTC {
            columns.day = timeZone.day(of: "c.received_at", from: from, to: to, dialect: dialect)
            // An estimated install is at most 41 days before its postback arrived.
            columns.installDay = timeZone.day(of: "c.estimated_install_at", from: from?.addingTimeInterval(-41 * 86_400), to: to, dialect: dialect)
        }
        // On the install basis, `day` and `week` are the estimated install's.
        if basis == .install { columns.day = columns.installDay }
        let (whereSQL, arguments) = whereClause(columns)
        let (grouping, tail) = groupAndOrder(columns, dialect)
        let byEvent = groupBy.contains(.event)
        // Grouped by event, each event row carries its own revenue; otherwise the postback's decoded total.
        let revenueMin = Money.micros(byEvent ? "e.revenue_min" : "c.revenue_min")
        let revenueMax = Money.micros(byEvent ? "e.revenue_max" : "c.revenue_max")
        let events = byEvent ? "sum(CASE WHEN e.id IS NOT NULL THEN coalesce(e.count, 1) ELSE 0 END)" : "coalesce(sum(c.event_count), 0)"
        let firstEventOnly = "CASE WHEN e.event_index IS NULL OR e.event_index = 0 THEN"
        let metrics = Self.metricColumns("c.",
            count: { condition in
                // Joined with events a postback spans several rows, so counts must be distinct; otherwise plain sums are exact and far cheaper.
                if byEvent { return "count(DISTINCT \(condition.map { "CASE WHEN \($0) THEN c.id END" } ?? "c.id"))" }
                return condition.map { "sum(CASE WHEN \($0) THEN 1 ELSE 0 END)" } ?? "count(*)"
            },
            events: events, revenueMin: revenueMin, revenueMax: revenueMax,
            shareWithoutValue: dialect.round("avg(CASE WHEN c.conversion_value_unsigned IS NULL AND c.coarse_value_unsigned IS NULL THEN 1.0 ELSE 0.0 END)", 4),
            shareWithValue: dialect.round("avg(CASE WHEN c.conversion_value_unsigned IS NOT NULL OR c.coarse_value_unsigned IS NOT NULL THEN 1.0 ELSE 0.0 END)", 4),
            shareWithCountry: dialect.round("avg(CASE WHEN c.country_code_unsigned IS NOT NULL THEN 1.0 ELSE 0.0 END)", 4),
            duplicates: "sum(\(byEvent ? "\(firstEventOnly) c.duplicates ELSE 0 END" : "c.duplicates"))",
            replays: "sum(\(byEvent ? "\(firstEventOnly) c.replays ELSE 0 END" : "c.replays"))")
        var sql = "SELECT " + (grouping + metrics).joined(separator: ", ") + " FROM conversions c" + Dimension.joins(self.grouping, columns)
        if byEvent { sql += " LEFT JOIN postback_events e ON e.postback_id = c.id" }
        return (sql + " " + whereSQL + tail, arguments)
    }
}

/// Where each logical report column lives: the `conversions` view (`c`) or the rollup (`r`).
struct ReportColumns {
    let isRollup: Bool
    /// The day bucket: UTC, or a local day when the report asks for a time zone.
    var day: String
    /// The estimated install day, in the report's zone (rows only).
    var installDay = "substr(c.estimated_install_at, 1, 10)"
    let countable, app, adNetwork, family, environment, source, digitCount: String
    let conversionType, conversionClass, window, didWin, interaction, country, tier, currency: String

    static let rows = ReportColumns(
        isRollup: false, day: "c.day", countable: "c.countable", app: "c.app", adNetwork: "c.ad_network_id", family: "c.protocol",
        environment: "c.environment", source: "c.source_identifier", digitCount: "c.digit_count", conversionType: "c.conversion_type",
        conversionClass: "c.conversion_class", window: "c.conversion_window", didWin: "c.did_win", interaction: "c.interaction",
        country: "c.country_code_unsigned", tier: "c.tier_min", currency: "c.currency")

    /// NULLs are stored as '' or -1 in the rollup's key; NULLIF gives them back.
    static let rollup = ReportColumns(
        isRollup: true, day: "r.day", countable: "r.countable", app: "r.app", adNetwork: "r.ad_network_id", family: "r.protocol",
        environment: "NULLIF(r.environment, '')", source: "NULLIF(r.source_digits, '')", digitCount: "NULLIF(r.digit_count, -1)",
        conversionType: "r.conversion_type", conversionClass: "NULLIF(r.conversion_class, '')", window: "r.conversion_window",
        didWin: "r.did_win", interaction: "NULLIF(r.interaction, '')", country: "NULLIF(r.country, '')", tier: "r.tier_min",
        currency: "NULLIF(r.currency, '')")
}
