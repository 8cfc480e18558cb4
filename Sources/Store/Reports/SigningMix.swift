import Foundation
import JWS
import Postback

/// What each ad network really signs (issue 48, item 6): over the postbacks Apple signed for it in a period, the
/// share of each protocol version, winning against non-winning, each window, each tier, view-through and
/// re-engagements; beside the installs they count and the installs the network claims. Networks are said to "behave
/// as SKAdNetwork 3"; this shows what they send.
public struct SigningMix: Sendable {
    let engine: any DatabaseEngine

    /// The report's columns, each defined once (docs/metrics.md, `countersign signing --help` and the OpenAPI document
    /// show the same text).
    public enum Column: String, Sendable, CaseIterable {
        case adNetwork = "ad_network", postbacks
        case skan12 = "skan_1_2", skan3 = "skan_3", skan4 = "skan_4", aak
        case winning, nonWinning = "non_winning"
        case window0 = "window_0", window1 = "window_1", window2 = "window_2"
        case tier0 = "tier_0", tier1 = "tier_1", tier2 = "tier_2", tier3 = "tier_3"
        case viewThrough = "view_through", reEngagements = "re_engagements"
        case installs, claimedInstalls = "claimed_installs"

        /// What the column is, in an analyst's words.
        public var definition: String {
            switch self {
            case .adNetwork: "The ad network id Apple signed."
            case .postbacks: "Postbacks Apple signed for the network with its production keys that arrived in the period, every window and class, winning or not, each once."
            case .skan12: "Share of them in SKAdNetwork 1.0 to 2.2 (no windows, no tiers beyond the source app)."
            case .skan3: "Share in SKAdNetwork 3.0 (winning and up to five non-winning, one postback per install)."
            case .skan4: "Share in SKAdNetwork 4.0 (three windows, coarse values, hierarchical source identifiers)."
            case .aak: "Share in AdAttributionKit (as SKAdNetwork 4.0, plus re-engagements)."
            case .winning: "Share with did-win true."
            case .nonWinning: "Share with did-win false."
            case .window0: "Share from the first window (days 0-2); every postback before SKAdNetwork 4.0."
            case .window1: "Share from the second window (days 3-7)."
            case .window2: "Share from the third window (days 8-35)."
            case .tier0: "Share at crowd-anonymity tier 0 (the lowest tier the fields allow)."
            case .tier1: "Share at tier 1."
            case .tier2: "Share at tier 2."
            case .tier3: "Share at tier 3."
            case .viewThrough: "Share whose interaction was a view (AdAttributionKit's unsigned ad-interaction-type, SKAdNetwork's signed fidelity-type 0)."
            case .reEngagements: "Share that are AdAttributionKit re-engagements."
            case .installs: "Installs these postbacks count, as the reports count them: winning first-window install postbacks that count."
            case .claimedInstalls: "Installs the network claims in its imported reports for the period's days; empty when no report gives them."
            }
        }
    }

    /// One row per network with postbacks or claims in the `days` UTC days up to today (today included), of `app` or
    /// every app.
    public func report(app: AppID?, days: Int, now: Date = Date()) async throws -> ReportTable {
        let since = String(Timestamp.format(now.addingTimeInterval(-Double(days - 1) * 86_400)).prefix(10))
        let (signed, claimed) = try await engine.read { db in
            var conditions = ["outcome = 'verified'", "environment = 'production'", "received_at >= ?"]
            var arguments: [any SQLValueConvertible] = [since]
            if let app { conditions.append("advertised_item_id = ?"); arguments.append(app) }
            func count(_ condition: String) -> String { "sum(CASE WHEN \(condition) THEN 1 ELSE 0 END)" }
            let measures = [
                count("protocol = 'skan' AND version IN ('1.0', '2.0', '2.1', '2.2')"), count("protocol = 'skan' AND version = '3.0'"),
                count("protocol = 'skan' AND version = '4.0'"), count("protocol = 'aak'"), count("did_win = 1"), count("did_win = 0"),
                count("conversion_window = 0"), count("conversion_window = 1"), count("conversion_window = 2"),
                count("tier_min = 0"), count("tier_min = 1"), count("tier_min = 2"), count("tier_min = 3"),
                count("interaction = 'view'"), count("conversion_class = 're-engagement'"),
                count("countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'"),
            ]
            let signed = try db.rows("SELECT ad_network_id, count(*) AS postbacks, " + measures.enumerated().map { "\($1) AS m\($0)" }.joined(separator: ", ")
                + " FROM postbacks WHERE " + conditions.joined(separator: " AND ") + " GROUP BY ad_network_id", arguments)
            var spendConditions = ["day >= ?"]
            var spendArguments: [any SQLValueConvertible] = [since]
            if let app { spendConditions.append("app = ?"); spendArguments.append(app) }
            let claimed = try db.rows("SELECT ad_network_id, sum(claimed_installs) AS claimed FROM spend_daily WHERE "
                                      + spendConditions.joined(separator: " AND ") + " GROUP BY ad_network_id", spendArguments)
            return (signed, claimed)
        }
        var claims: [String: Int64?] = [:]
        for row in claimed { claims[try row.get("ad_network_id", as: String.self)] = try row.get("claimed", as: Int64?.self) }
        var rows: [String: [JSONValue]] = [:]
        for row in signed {
            let network = try row.get("ad_network_id", as: String.self)
            let total = try row.get("postbacks", as: Int64.self)
            let measures = try (0..<16).map { try row.get("m\($0)", as: Int64.self) }
            let shares = measures.prefix(15).map { JSONValue.number(String(format: "%.4f", Double($0) / Double(max(total, 1)))) }
            rows[network] = [.string(network), .number(String(total))] + shares + [.number(String(measures[15])), claims[network].flatMap { $0 }.map { .number(String($0)) } ?? .null]
        }
        for (network, claim) in claims where rows[network] == nil {
            rows[network] = [.string(network), .number("0")] + Array(repeating: JSONValue.null, count: 15) + [.number("0"), claim.map { .number(String($0)) } ?? .null]
        }
        return ReportTable(columns: Column.allCases.map(\.rawValue), rows: rows.keys.sorted().compactMap { rows[$0] })
    }
}
