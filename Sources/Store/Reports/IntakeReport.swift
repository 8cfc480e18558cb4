import Foundation
import JWS
import Postback

/// What became of every postback received, counted by status: the numbers behind the dashboard's overview and health
/// pages, and `GET /v1/intake`.
///
/// Each stored postback row counts once by its status (`counted`, `development`, `not_counted`, `unverifiable`); each
/// body that did not become a row counts once by its receipt's disposition (`duplicate`, `replay`, `unverified_copy`,
/// `rejected`). A rejected body counts under the app and ad network it claims (never believed: anyone can send one
/// naming any app); it has no protocol or environment, so filtering by those leaves rejected bodies out.
public struct IntakeQuery: Sendable, Equatable {
    /// A grouping dimension.
    public enum Dimension: String, Sendable, CaseIterable {
        case day, week, status, reason, route, `protocol`, app, adNetwork = "ad_network", environment
        /// The pinned key a stored postback verified with (empty for unverifiable ones).
        case keyID = "key_id"
        /// The SKAdNetwork version (empty for AdAttributionKit): an unknown one leaves postbacks unverifiable.
        case version

        var isText: Bool { self != .app }

        func expression(day: String, _ dialect: SQLDialect) -> String {
            switch self {
            case .day: day
            case .week: dialect.isoWeek(day)
            case .status: "i.status"
            case .reason: "i.reason"
            case .route: "i.route"
            case .protocol: "i.protocol"
            case .app: "i.app"
            case .adNetwork: "i.ad_network_id"
            case .environment: "i.environment"
            case .keyID: "i.key_id"
            case .version: "i.version"
            }
        }
    }

    /// What became of a postback.
    public enum Status: String, Sendable, CaseIterable {
        /// Verified with a production key and counted.
        case counted
        /// Verified with Apple's development key: kept, never counted.
        case development
        /// Verified but not counted for another reason (an ad network not accepted).
        case notCounted = "not_counted"
        /// Kept without a verdict (unknown key or version); `countersign reverify` checks it again once the key is pinned.
        case unverifiable
        /// A copy identical to a stored postback.
        case duplicate
        /// A copy of a stored postback with different unsigned fields.
        case replay
        /// An unverifiable copy of a postback stored verified.
        case unverifiedCopy = "unverified_copy"
        /// Not a storable postback (invalid, badly signed, or refused): only its receipt is kept.
        case rejected
    }

    public var from: Date?
    public var to: Date?
    public var timeZone = ReportTimeZone.utc
    public var app: AppID?
    public var adNetwork: String?
    public var family: PostbackProtocol?
    public var environment: String?
    /// Postbacks of this conversion window (0-2); leaves rejected bodies out.
    public var window: Int?
    public var status: Status?
    public var groupBy: [Dimension] = []

    public init() {}


    /// The grouping: the dimensions asked for, or `status` when none was.
    public var grouping: [Dimension] { groupBy.isEmpty ? [.status] : groupBy }

    /// One row per group with a `postbacks` count: stored rows by status, then the receipts that made no row.
    func sql(_ dialect: SQLDialect) -> (sql: String, arguments: [any SQLValueConvertible]) {
        let rows = """
            SELECT p.received_at, CASE WHEN p.outcome = 'unverifiable' THEN 'unverifiable' WHEN p.countable = 1 THEN 'counted' \
            WHEN p.environment = 'development' THEN 'development' ELSE 'not_counted' END AS status, p.reason, p.route, \
            p.protocol, p.advertised_item_id AS app, p.ad_network_id, p.environment, p.key_id, p.version FROM postbacks p
            """
        // A body that made no row has the app and ad network of the postback it copies, else those it claims (a rejected
        // body's, never believed), as performance's `forged` counts it (issue 49, finding 11).
        let (receiptApp, receiptNetwork) = ("coalesce(p.advertised_item_id, r.claimed_app)", "coalesce(p.ad_network_id, r.claimed_ad_network)")
        let receipts = """
            SELECT r.received_at, r.disposition AS status, r.reason, r.route, p.protocol, \(receiptApp) AS app, \
            \(receiptNetwork) AS ad_network_id, p.environment, p.key_id, p.version FROM receipts r LEFT JOIN postbacks p ON p.id = r.postback_id
            """
        var arguments: [any SQLValueConvertible] = []
        // Both parts read the postback's columns as `p`; the time, app and ad network columns differ.
        func conditions(time: String, app appColumn: String = "p.advertised_item_id", adNetwork networkColumn: String = "p.ad_network_id") -> [String] {
            var conditions: [String] = []
            if let from { conditions.append("\(time) >= ?"); arguments.append(Timestamp.format(from)) }
            if let to { conditions.append("\(time) < ?"); arguments.append(Timestamp.format(to)) }
            if let app { conditions.append("\(appColumn) = ?"); arguments.append(app) }
            if let adNetwork { conditions.append("\(networkColumn) = ?"); arguments.append(adNetwork) }
            if let family { conditions.append("p.protocol = ?"); arguments.append(family.rawValue) }
            if let environment { conditions.append("p.environment = ?"); arguments.append(environment) }
            if let window { conditions.append("p.conversion_window = ?"); arguments.append(window) }
            return conditions
        }
        let rowConditions = conditions(time: "p.received_at")
        let receiptConditions = ["r.disposition <> 'stored'"] + conditions(time: "r.received_at", app: receiptApp, adNetwork: receiptNetwork)
        let union = rows + (rowConditions.isEmpty ? "" : " WHERE " + rowConditions.joined(separator: " AND "))
            + " UNION ALL " + receipts + " WHERE " + receiptConditions.joined(separator: " AND ")
        let day = timeZone.isUTC ? dialect.day(of: "i.received_at", shiftedBy: 0)
            : timeZone.day(of: "i.received_at", from: from, to: to, dialect: dialect)
        let grouping = grouping
        let expressions = grouping.map { $0.expression(day: day, dialect) }
        let select = zip(grouping, expressions).map { "\($1) AS \"\($0.rawValue)\"" }
        let positions = (1...grouping.count).map(String.init).joined(separator: ", ")
        let order = zip(grouping, expressions).enumerated().map { dialect.orderTerm($1.1, position: $0 + 1, isText: $1.0.isText) }
        // A stored row's status is computed, so a status filter applies outside the union.
        var outer = ""
        if let status {
            outer = " WHERE i.status = ?"
            arguments.append(status.rawValue)
        }
        let sql = "SELECT " + (select + ["count(*) AS postbacks"]).joined(separator: ", ") + " FROM (" + union + ") i" + outer
            + " GROUP BY \(positions) ORDER BY \(order.joined(separator: ", "))"
        return (sql, arguments)
    }
}

extension ReportReader {
    /// The intake report: postbacks and bodies received, grouped as `query` asks, with a `postbacks` count.
    public func intake(_ query: IntakeQuery) async throws -> ReportTable {
        let (sql, arguments) = query.sql(engine.dialect)
        let rows = try await engine.read { db in try db.rows(sql, arguments, reuse: .once).map { $0.values.map(ReportTable.cell) } }
        return ReportTable(columns: query.grouping.map(\.rawValue) + ["postbacks"], rows: rows, timeZone: query.timeZone.identifier, dayBasis: .arrival)
    }
}
