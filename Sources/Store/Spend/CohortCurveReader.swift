import Foundation
import JWS
import Spend

/// Cohort curves (docs/metrics.md, "Cohort curves"): per install week, or pooled over the weeks of the period, what an
/// install returned by days 2, 7 and 35, each point over the weeks whose window has closed, so no young cohort pulls a
/// curve down. Read from the performance report's sums by install week, so every figure agrees with it.
public struct CohortCurveReader: Sendable {
    let engine: any DatabaseEngine

    /// The dimensions cohort curves take: a cohort is an install week, so there is no `day`, and spend has no type.
    public static let dimensions: [PerformanceQuery.Dimension] = [.week, .app, .appName, .adNetwork, .adNetworkName, .campaign, .country]

    /// The curves for `query` (install basis): its dimensions, `currency`, then ``CohortMetric`` in order. Throws
    /// ``PerformanceReader/TooManyGroups`` when the weeks and groups read exceed `maximumGroups`.
    public func report(_ query: PerformanceQuery, maximumGroups: Int?) async throws -> ReportTable {
        var weekly = query
        weekly.basis = .install
        if !weekly.groupBy.contains(.week) { weekly.groupBy.append(.week) }
        let pooled = !query.groupBy.contains(.week), weekIndex = weekly.groupBy.count - 1
        let now = query.asOf ?? Date()
        var curves: [[SQLValue]: CohortCurve] = [:]
        for (key, group) in try await PerformanceReader(engine: engine).groups(weekly, maximumGroups: maximumGroups) {
            let span = PerformanceReader.span(weekly, firstDay: group.firstDay, now: now)
            let closed = (0...2).map {
                WindowMaturity.of(window: $0, firstDayStart: span.start, lastDayEnd: span.end, now: now, installBasis: true) == .closed
            }
            let row = pooled ? Array(key[..<weekIndex]) : key
            curves[row, default: CohortCurve()].add(group, closed: closed)
        }
        let rows = curves.map { (cells: $0.key.map(ReportTable.cell), curve: $0.value) }
            .sorted { PerformanceReader.precedes($0.cells, $1.cells) }
            .map { $0.cells + $0.curve.cells(target: query.currency) }
        return ReportTable(columns: query.groupBy.map(\.rawValue) + ["currency"] + CohortMetric.allCases.map(\.rawValue), rows: rows,
                           timeZone: query.timeZone.identifier, dayBasis: .install)
    }
}

/// One row of the cohort curves while it is added up: installs and spend of every week, and per point (D2, D7, D35)
/// the installs, spend and cumulative revenue (middle) of the weeks whose window has closed, in millionths per currency.
struct CohortCurve {
    private var installs: Int64 = 0
    private var spend: [String: Decimal] = [:]
    private var points = [Point](repeating: Point(), count: 3)
    private var ratesUsed = Set<String>()
    private var unconverted = Set<String>()

    struct Point {
        var installs: Int64 = 0
        var revenue: [String: Decimal] = [:]
        var spend: [String: Decimal] = [:]
    }

    /// Adds one install week's sums; `closed` says which of its windows have closed.
    mutating func add(_ group: PerformanceGroup, closed: [Bool]) {
        installs += group.installs
        for (currency, amount) in group.spend { spend[currency, default: 0] += amount }
        ratesUsed.formUnion(group.ratesUsed)
        unconverted.formUnion(group.unconverted)
        for window in 0...2 where closed[window] {
            points[window].installs += group.installs
            for (currency, amount) in group.spend { points[window].spend[currency, default: 0] += amount }
            for (currency, sums) in group.revenue {
                // Windows 0 to `window`, each the middle of its low and high ends.
                var total = Decimal(0)
                for earlier in 0...window { total += (sums[earlier * 2] + sums[earlier * 2 + 1]) / 2 }
                points[window].revenue[currency, default: 0] += total
            }
        }
    }

    /// The row's cells: `currency`, then ``CohortMetric`` in order.
    func cells(target: String?) -> [JSONValue] {
        let (currency, notes) = PerformanceGroup.currency(of: Set(spend.keys).union(points.flatMap(\.revenue.keys)), target: target,
                                                          unconverted: unconverted)
        func money(_ micros: Decimal?) -> JSONValue { micros.map { .number(PerformanceGroup.decimal($0 / 1_000_000, places: 6)) } ?? .null }
        func ratio(_ part: Decimal?, _ whole: Decimal?) -> JSONValue {
            guard let part, let whole, whole != 0 else { return .null }
            return .number(PerformanceGroup.decimal(part / whole, places: 4))
        }
        var cells: [CohortMetric: JSONValue] = [
            .installs: .number(String(installs)), .spend: money(currency.flatMap { spend[$0] }),
            .ratesUsed: ratesUsed.isEmpty ? .null : .string(RatesUsed.summary(ratesUsed)),
            .note: notes.isEmpty ? .null : .string(notes.joined(separator: "; ")),
        ]
        let metrics: [(CohortMetric, CohortMetric, CohortMetric)] = [(.cohortInstallsD2, .revenuePerInstallD2, .roasD2),
                                                                      (.cohortInstallsD7, .revenuePerInstallD7, .roasD7),
                                                                      (.cohortInstallsD35, .revenuePerInstallD35, .roasD35)]
        for (point, (count, perInstall, roas)) in zip(points, metrics) {
            cells[count] = .number(String(point.installs))
            // No revenue in the row's currency is none, when the currency is known; unknown, when it is not.
            let revenue = currency.map { point.revenue[$0] ?? 0 }
            cells[perInstall] = point.installs == 0 ? .null : money(revenue.map { $0 / Decimal(point.installs) })
            cells[roas] = ratio(revenue, currency.flatMap { point.spend[$0] })
        }
        return [currency.map { .string($0) } ?? .null] + CohortMetric.allCases.map { cells[$0] ?? .null }
    }
}
