import Foundation
import GRDB
import JWS
import Postback

/// A report request: filters, grouping and output, validated against closed lists so no caller text reaches SQL.
public struct ReportQuery: Sendable, Equatable {
    /// A grouping dimension and the SQL expression it reads.
    public enum Dimension: String, Sendable, CaseIterable {
        case day, week, app, adNetwork = "ad_network", `protocol`, environment, campaign, adGroup = "ad_group", creative
        case sourceIdentifier = "source_identifier", conversionType = "conversion_type", conversionClass = "conversion_class"
        case window, didWin = "did_win", interaction, country, tier, event
        case campaignName = "campaign_name", adGroupName = "ad_group_name", creativeName = "creative_name"

        var expression: String {
            switch self {
            case .day: "c.day"
            case .week: "strftime('%Y-W%W', c.received_at)"
            case .app: "c.app"
            case .adNetwork: "c.ad_network_id"
            case .protocol: "c.protocol"
            case .environment: "c.environment"
            case .campaign: "c.campaign"
            case .adGroup: "c.ad_group"
            case .creative: "c.creative"
            case .sourceIdentifier: "c.source_identifier"
            case .conversionType: "c.conversion_type"
            case .conversionClass: "c.conversion_class"
            case .window: "c.conversion_window"
            case .didWin: "c.did_win"
            case .interaction: "c.interaction"
            case .country: "c.country_code_unsigned"
            case .tier: "c.tier_min"
            case .event: "e.name"
            case .campaignName: Self.levelName(0)
            case .adGroupName: Self.levelName(1)
            case .creativeName: Self.levelName(2)
            }
        }

        /// The name the schema gives level `index` of the source identifier (levels in schema order).
        private static func levelName(_ index: Int) -> String { "json_extract(c.source_levels, '$[\(index)].name')" }
    }

    public var from: Date?
    public var to: Date?
    public var app: Int64?
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
    /// Include postbacks that do not count (unverifiable, development); by default only counted ones are reported.
    public var includeUncounted = false
    public var groupBy: [Dimension] = []

    public init() {}

    /// Why a parameter was refused, for a 400 or a CLI usage error.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let parameter: String
        public let message: String
        public var description: String { "\(parameter): \(message)" }
    }

    /// Parses name/value parameters (`from`, `to`, `app`, `ad_network`, `source_prefix`, `type`, `window`, `did_win`,
    /// `interaction`, `country`, `environment`, `tier`, `protocol`, `include_uncounted`, `by`). Unknown names are refused.
    public static func parse(_ parameters: [(String, String)], extraAllowed: Set<String> = []) throws(Problem) -> ReportQuery {
        var query = ReportQuery()
        for (name, value) in parameters {
            func fail(_ message: String) -> Problem { Problem(parameter: name, message: message) }
            switch name {
            case "from", "to":
                guard let date = Timestamp.parse(value) else { throw fail("must be an ISO 8601 date or time such as 2026-11-01") }
                if name == "from" { query.from = date } else { query.to = date }
            case "app":
                guard let app = Int64(value), app >= 0 else { throw fail("must be a numeric App Store id") }
                query.app = app
            case "ad_network": query.adNetwork = value
            case "source_prefix":
                guard (1...4).contains(value.count), value.allSatisfy({ $0.isASCII && $0.isNumber }) else { throw fail("must be 1 to 4 digits") }
                query.sourcePrefix = value
            case "type":
                guard ["download", "redownload", "re-engagement", "reengagement", "install"].contains(value) else {
                    throw fail("must be download, redownload, re-engagement or install")
                }
                query.conversionType = value
            case "window":
                guard let window = Int(value), (0...2).contains(window) else { throw fail("must be 0, 1 or 2") }
                query.window = window
            case "did_win":
                guard let flag = ["true": true, "false": false, "1": true, "0": false][value] else { throw fail("must be true or false") }
                query.didWin = flag
            case "interaction":
                guard ["click", "view"].contains(value) else { throw fail("must be click or view") }
                query.interaction = value
            case "country":
                guard value.count == 2, value.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw fail("must be a two-letter country code") }
                query.country = value.uppercased()
            case "environment":
                guard ["production", "development"].contains(value) else { throw fail("must be production or development") }
                query.environment = value
            case "tier":
                guard let tier = Int(value), (0...3).contains(tier) else { throw fail("must be 0 to 3") }
                query.tier = tier
            case "protocol":
                guard let family = PostbackProtocol(rawValue: value) else { throw fail("must be aak or skan") }
                query.family = family
            case "include_uncounted":
                guard let flag = ["true": true, "false": false, "1": true, "0": false][value] else { throw fail("must be true or false") }
                query.includeUncounted = flag
            case "by":
                for item in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
                    guard let dimension = Dimension(rawValue: item) else {
                        throw fail("unknown dimension \"\(item)\"; use \(Dimension.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    if !query.groupBy.contains(dimension) { query.groupBy.append(dimension) }
                }
            default:
                if extraAllowed.contains(name) { continue }
                throw fail("unknown parameter")
            }
        }
        if let from = query.from, let to = query.to, from >= to { throw Problem(parameter: "to", message: "must be after from") }
        return query
    }

    /// The WHERE clause and its bound arguments.
    func whereClause() -> (sql: String, arguments: StatementArguments) {
        var conditions: [String] = []
        var arguments: [(any DatabaseValueConvertible)?] = []
        if !includeUncounted { conditions.append("c.countable = 1") }
        if let from { conditions.append("c.received_at >= ?"); arguments.append(Timestamp.format(from)) }
        if let to { conditions.append("c.received_at < ?"); arguments.append(Timestamp.format(to)) }
        if let app { conditions.append("c.app = ?"); arguments.append(app) }
        if let adNetwork { conditions.append("c.ad_network_id = ?"); arguments.append(adNetwork) }
        if let sourcePrefix { conditions.append("substr(c.source_identifier, 1, ?) = ?"); arguments += [sourcePrefix.count, sourcePrefix] }
        switch conversionType {
        case "install": conditions.append("c.conversion_class = 'install'")
        case "re-engagement", "reengagement": conditions.append("c.conversion_class = 're-engagement'")
        case let type?: conditions.append("c.conversion_type = ?"); arguments.append(type)
        case nil: break
        }
        if let window { conditions.append("c.conversion_window = ?"); arguments.append(window) }
        if let didWin { conditions.append("c.did_win = ?"); arguments.append(didWin) }
        if let interaction { conditions.append("c.interaction = ?"); arguments.append(interaction) }
        if let country { conditions.append("c.country_code_unsigned = ?"); arguments.append(country) }
        if let environment { conditions.append("c.environment = ?"); arguments.append(environment) }
        if let tier { conditions.append("c.tier_min = ?"); arguments.append(tier) }
        if let family { conditions.append("c.protocol = ?"); arguments.append(family.rawValue) }
        return (conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "), StatementArguments(arguments))
    }

    /// The metrics every report row carries, in order.
    public static let metrics = [
        "postbacks", "unique_conversions", "installs", "re_engagements", "winning", "non_winning", "events",
        "revenue_min", "revenue_max", "revenue_mid", "share_without_value", "share_with_unsigned_value", "duplicates", "replays",
    ]

    /// The report SQL: one row per group with `metrics`.
    func sql() -> (sql: String, arguments: StatementArguments) {
        let (whereSQL, arguments) = whereClause()
        let grouping = groupBy.map { "\($0.expression) AS \"\($0.rawValue)\"" }
        let byEvent = groupBy.contains(.event)
        // Grouped by event, each event row carries its own revenue; otherwise the postback's decoded total.
        let revenueMin = byEvent ? "e.revenue_min" : "c.revenue_min"
        let revenueMax = byEvent ? "e.revenue_max" : "c.revenue_max"
        let events = byEvent ? "sum(CASE WHEN e.id IS NOT NULL THEN coalesce(e.count, 1) ELSE 0 END)" : "coalesce(sum(c.event_count), 0)"
        // Joined with events a postback spans several rows, so counts must be distinct; otherwise plain sums are exact and far cheaper.
        func count(_ condition: String?) -> String {
            if byEvent { return "count(DISTINCT \(condition.map { "CASE WHEN \($0) THEN c.id END" } ?? "c.id"))" }
            return condition.map { "sum(CASE WHEN \($0) THEN 1 ELSE 0 END)" } ?? "count(*)"
        }
        let metrics = [
            "\(count(nil)) AS postbacks",
            "\(count("c.countable")) AS unique_conversions",
            "\(count("c.conversion_class = 'install'")) AS installs",
            "\(count("c.conversion_class = 're-engagement'")) AS re_engagements",
            "\(count("c.did_win")) AS winning",
            "\(count("NOT c.did_win")) AS non_winning",
            "\(events) AS events",
            "round(coalesce(sum(\(revenueMin)), 0), 2) AS revenue_min",
            "round(coalesce(sum(\(revenueMax)), 0), 2) AS revenue_max",
            "round(coalesce(sum((\(revenueMin) + \(revenueMax)) / 2.0), 0), 2) AS revenue_mid",
            "round(avg(CASE WHEN c.conversion_value_unsigned IS NULL AND c.coarse_value_unsigned IS NULL THEN 1.0 ELSE 0.0 END), 4) AS share_without_value",
            "round(avg(CASE WHEN c.conversion_value_unsigned IS NOT NULL OR c.coarse_value_unsigned IS NOT NULL THEN 1.0 ELSE 0.0 END), 4) AS share_with_unsigned_value",
            "sum(\(byEvent ? "CASE WHEN e.event_index IS NULL OR e.event_index = 0 THEN c.duplicates ELSE 0 END" : "c.duplicates")) AS duplicates",
            "sum(\(byEvent ? "CASE WHEN e.event_index IS NULL OR e.event_index = 0 THEN c.replays ELSE 0 END" : "c.replays")) AS replays",
        ]
        var sql = "SELECT " + (grouping + metrics).joined(separator: ", ") + " FROM conversions c"
        if byEvent { sql += " LEFT JOIN postback_events e ON e.postback_id = c.id" }
        sql += " " + whereSQL
        if !groupBy.isEmpty {
            let positions = (1...groupBy.count).map(String.init).joined(separator: ", ")
            sql += " GROUP BY \(positions) ORDER BY \(positions)"
        }
        return (sql, arguments)
    }
}

/// A report's result: column names and rows of JSON values.
public struct ReportTable: Sendable {
    public let columns: [String]
    public let rows: [[JSONValue]]
}

extension PostbackStore {
    /// Runs a report.
    public func report(_ query: ReportQuery) async throws -> ReportTable {
        let (sql, arguments) = query.sql()
        let columns = query.groupBy.map(\.rawValue) + ReportQuery.metrics
        let rows = try await pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                row.databaseValues.map(Self.json)
            }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    /// Stored conversions, oldest first, after the `after` id cursor; at most `limit`.
    public func conversions(_ query: ReportQuery, after: Int64, limit: Int) async throws -> ReportTable {
        var (whereSQL, arguments) = query.whereClause()
        whereSQL += (whereSQL.isEmpty ? "WHERE " : " AND ") + "c.id > ?"
        arguments += [after]
        arguments += [limit]
        let columns = Self.conversionColumns
        let sql = "SELECT \(columns.map { "c.\($0)" }.joined(separator: ", ")) FROM conversions c \(whereSQL) ORDER BY c.id LIMIT ?"
        let boundArguments = arguments
        let rows = try await pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: boundArguments).map { row in row.databaseValues.map(Self.json) }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    /// The columns `/v1/conversions` returns: the `conversions` view's, documented in docs/sql.md.
    public static let conversionColumns = [
        "id", "received_at", "protocol", "version", "outcome", "environment", "countable", "ad_network_id", "app",
        "postback_identifier", "source_identifier", "campaign", "ad_group", "creative", "conversion_type", "conversion_class",
        "conversion_window", "did_win", "interaction", "tier_min", "tier_max", "conversion_value_unsigned", "coarse_value_unsigned",
        "country_code_unsigned", "decode_status", "schema_revision", "schema_version", "revenue_min", "revenue_max", "currency",
        "duplicates", "replays",
    ]

    static func json(_ value: DatabaseValue) -> JSONValue {
        switch value.storage {
        case .null: .null
        case .int64(let integer): .number(String(integer))
        case .double(let double): .number(double == double.rounded() && abs(double) < 1e15 ? String(Int64(double)) : String(double))
        case .string(let text): .string(text)
        case .blob(let data): .string(Base64.encode(Array(data), alphabet: .standard))
        }
    }
}
