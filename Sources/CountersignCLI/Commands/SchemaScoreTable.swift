import CountersignServer
import ArgumentParser
import ConversionSchema
import CountersignEncoder
import Foundation
import JWS
import Postback
import SchemaDesign
import Spend
import Store

/// The score of every window a schema defines, as rows: per value, then all users and paying users.
enum SchemaScoreTable {
    static func table(_ schema: ConversionSchema, history: RevenueHistory, at time: Date) -> ReportTable {
        var rows: [[JSONValue]] = []
        guard let version = EncodingSchemaCompiler.compile(schema).version(at: time), let windows = version.install else {
            return ReportTable(columns: columns, rows: [])
        }
        for (window, coarse) in [(0, false)] + windows.indices.map({ ($0, true) }) {
            let score = coarse ? RevenueScore(rules: windows[window].coarse, revenue: history.revenue[window], label: \.rawValue)
                : RevenueScore(rules: windows[window].fine, revenue: history.revenue[window], label: { String($0) })
            guard !score.rows.isEmpty else { continue }
            let kind: JSONValue = .string(coarse ? "coarse" : "fine")
            for row in score.rows {
                rows.append([.number(String(window)), kind, .string(row.value), .number(String(row.users)),
                             row.revenue.map { money($0.min) } ?? .null, row.revenue.map { money($0.max) } ?? .null,
                             money(row.trueMean), money(row.decoded), money(row.meanAbsoluteError)])
            }
            let paying = Double(max(score.payingUsers, 1))
            let everyone = Double(max(score.users, 1))
            rows.append([.number(String(window)), kind, .string("all users"), .number(String(score.users)), .null, .null,
                         money(score.trueRevenue / everyone), money(score.decodedRevenue / everyone), money(score.absoluteError / everyone)])
            rows.append([.number(String(window)), kind, .string("paying users"), .number(String(score.payingUsers)), .null, .null,
                         money(score.trueRevenue / paying), money(score.decodedPayingRevenue / paying), .null])
        }
        return ReportTable(columns: columns, rows: rows)
    }

    static let columns = ["window", "values", "value", "users", "min", "max", "true_mean", "decoded", "mean_abs_error"]

    /// An amount with two decimals.
    private static func money(_ amount: Double) -> JSONValue { .number(String(format: "%.2f", amount)) }
}
