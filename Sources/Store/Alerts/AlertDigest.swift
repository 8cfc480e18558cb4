import Foundation
import JWS
import Postback

/// A digest rule's daily alert: one day's performance by ad network, as a sentence per network and as figures.
public enum AlertDigest {
    /// The performance columns a digest shows, when the report has them.
    static let columns = ["ad_network", "currency", "installs", "claimed_installs", "spend", "ecpi", "revenue_mid", "roas_mid"]

    /// The digest of `day` for `rule` from `table` (performance by ad network on the arrival basis).
    public static func event(rule: AlertRule, day: String, table: ReportTable, now: Date) -> AlertEvent {
        let shown = columns.compactMap { column in table.columns.firstIndex(of: column).map { (column, $0) } }
        var rows: [JSONValue] = []
        var lines: [String] = []
        for row in table.rows {
            let cells = JSONObject(shown.map { JSONMember(key: $0.0, value: row[$0.1]) })
            rows.append(.object(cells))
            func text(_ key: String) -> String {
                switch cells[key] {
                case .string(let value)?: value
                case .number(let value)?: value
                default: "-"
                }
            }
            let currency = text("currency") == "-" ? "" : " " + text("currency")
            lines.append("\(text("ad_network")): \(text("installs")) installs (\(text("claimed_installs")) claimed), spend \(text("spend"))\(currency), eCPI \(text("ecpi")), revenue \(text("revenue_mid")), ROAS \(text("roas_mid"))")
        }
        let scope = AlertFigures.scope(rule)
        let summary = "\(day) (\(rule.timeZone), by arrival day)\(scope): " + (lines.isEmpty ? "nothing arrived and nothing was spent." : "\n" + lines.joined(separator: "\n"))
        return AlertEvent(rule: rule.name, kind: .digest, state: .digest, key: "digest:\(day)", at: now, summary: summary, figures: JSONObject([
            JSONMember(key: "day", value: .string(day)), JSONMember(key: "time_zone", value: .string(rule.timeZone)),
            JSONMember(key: "basis", value: .string(DayBasis.arrival.rawValue)), JSONMember(key: "rows", value: .array(rows)),
        ]))
    }
}
