import Foundation
import JWS
import Spend

/// One row of the performance report while it is added up: counts, and money per currency in whole millionths (as
/// `Decimal`, exact, also once converted at a rate).
struct PerformanceGroup: Sendable {
    /// The count columns the verified query returns, in ``add(counts:)`` order.
    static let countColumns = ["installs", "re_engagements", "installs_with_value", "tier_0", "tier_value_0", "tier_1", "tier_value_1",
                               "tier_2", "tier_value_2", "tier_3", "tier_value_3", "not_counted_unverifiable", "not_counted_development",
                               "not_counted_policy", "copies"]
    private var counts = [Int64](repeating: 0, count: countColumns.count)
    /// The revenue amounts the verified query returns: installs' windows 0 to 2, low and high, then re-engagements'.
    static let revenueColumns = 8
    var forged: Int64 = 0
    private var claimedInstalls: Int64?
    private var claimedReEngagements: Int64?
    private var impressions: Int64?
    private var clicks: Int64?
    /// Revenue by currency, in millionths: install postbacks' low and high ends of windows 0, 1 and 2, then
    /// re-engagement postbacks' low and high ends, every window.
    private(set) var revenue: [String: [Decimal]] = [:]
    /// Spend by currency, in millionths.
    private(set) var spend: [String: Decimal] = [:]
    /// The currencies amounts came in, before any conversion.
    private(set) var sourceCurrencies = Set<String>()
    /// Rates used, and amounts no rate converted.
    private(set) var ratesUsed = Set<String>()
    private(set) var unconverted = Set<String>()
    /// The first and last report day the group's rows fell on (`YYYY-MM-DD` in the report's zone).
    private(set) var firstDay: String?
    private(set) var lastDay: String?

    /// Notes that a row of the group fell on `day`.
    mutating func saw(day: String) {
        if firstDay.map({ day < $0 }) ?? true { firstDay = day }
        if lastDay.map({ day > $0 }) ?? true { lastDay = day }
    }

    /// Verified installs so far.
    var installs: Int64 { counts[0] }

    mutating func add(counts more: [Int64]) {
        for index in counts.indices { counts[index] += more[index] }
    }

    mutating func addClaims(installs: Int64??, reEngagements: Int64??, impressions more: Int64??, clicks moreClicks: Int64??) {
        func add(_ total: inout Int64?, _ value: Int64??) {
            guard case .some(.some(let value)) = value else { return }
            total = (total ?? 0) + value
        }
        add(&claimedInstalls, installs)
        add(&claimedReEngagements, reEngagements)
        add(&impressions, more)
        add(&clicks, moreClicks)
    }

    /// Adds revenue (``revenueColumns`` amounts) in `currency`, converted on `day` when the report has a reporting currency.
    mutating func addRevenue(_ amounts: [Int64], currency: String, day: String, converter: CurrencyConverter) {
        guard let (rate, into) = convert(currency, day: day, converter: converter) else { return }
        var sums = revenue[into] ?? [Decimal](repeating: 0, count: Self.revenueColumns)
        for index in sums.indices { sums[index] += Decimal(amounts[index]) * rate }
        revenue[into] = sums
    }

    /// Adds spend in `currency`, converted on `day` when the report has a reporting currency.
    mutating func addSpend(_ micros: Int64, currency: String, day: String, converter: CurrencyConverter) {
        guard let (rate, into) = convert(currency, day: day, converter: converter) else { return }
        spend[into, default: 0] += Decimal(micros) * rate
    }

    private mutating func convert(_ currency: String, day: String, converter: CurrencyConverter) -> (Decimal, String)? {
        sourceCurrencies.insert(currency)
        guard let target = converter.target else { return (1, currency) }
        guard let (rate, label) = converter.rate(from: currency, on: day) else {
            unconverted.insert("\(currency) on \(day)")
            return nil
        }
        if !label.isEmpty { ratesUsed.insert(label) }
        return (rate, target)
    }

    /// The row's cells: `currency`, then ``PerformanceMetric`` in order, with each window's `maturity`.
    func cells(target: String?, maturity: [WindowMaturity]) -> [JSONValue] {
        let installs = counts[0]
        let (currency, notes) = Self.currency(of: Set(revenue.keys).union(spend.keys), target: target, unconverted: unconverted)
        let sums = currency.flatMap { revenue[$0] } ?? (currency == nil ? nil : [Decimal](repeating: 0, count: Self.revenueColumns))
        let spent = currency.flatMap { spend[$0] }
        let low = sums.map { $0[0] + $0[2] + $0[4] }, high = sums.map { $0[1] + $0[3] + $0[5] }
        let middle = sums.map { ($0[0] + $0[1] + $0[2] + $0[3] + $0[4] + $0[5]) / 2 }
        func window(_ index: Int) -> Decimal? { sums.map { ($0[index * 2] + $0[index * 2 + 1]) / 2 } }
        func money(_ micros: Decimal?) -> JSONValue { micros.map { .number(Self.decimal($0 / 1_000_000, places: 6)) } ?? .null }
        func ratio(_ part: Decimal?, _ whole: Decimal?) -> JSONValue {
            guard let part, let whole, whole != 0 else { return .null }
            return .number(Self.decimal(part / whole, places: 4))
        }
        func count(_ value: Int64?) -> JSONValue { value.map { .number(String($0)) } ?? .null }
        func nullRate(_ total: Int64, _ withValue: Int64) -> JSONValue { ratio(Decimal(total - withValue), total == 0 ? nil : Decimal(total)) }
        let withValue = counts[2]
        let modeled = withValue == 0 ? nil : middle.map { $0 * Decimal(installs) / Decimal(withValue) }
        let cells: [PerformanceMetric: JSONValue] = [
            .installs: count(installs), .reEngagements: count(counts[1]),
            .claimedInstalls: count(claimedInstalls), .claimedReEngagements: count(claimedReEngagements),
            .installGap: count(claimedInstalls.map { $0 - installs }),
            .installRatio: ratio(Decimal(installs), claimedInstalls.map { Decimal($0) }),
            .claimedWithoutPostback: count(claimedInstalls.map { max($0 - installs, 0) }),
            .impressions: count(impressions), .clicks: count(clicks),
            .spend: money(spent),
            .ecpi: installs == 0 ? .null : money(spent.map { $0 / Decimal(installs) }),
            .cpi: (claimedInstalls ?? 0) == 0 ? .null : money(spent.map { $0 / Decimal(claimedInstalls!) }),
            .revenueMin: money(low), .revenueMax: money(high), .revenueMid: money(middle),
            .revenueMidWindow0: money(window(0)), .revenueMidWindow1: money(window(1)), .revenueMidWindow2: money(window(2)),
            .reEngagementRevenueMin: money(sums.map { $0[6] }), .reEngagementRevenueMax: money(sums.map { $0[7] }),
            .reEngagementRevenueMid: money(sums.map { ($0[6] + $0[7]) / 2 }),
            .roasMin: ratio(low, spent), .roasMax: ratio(high, spent), .roasMid: ratio(middle, spent),
            .roasMidWindow0: ratio(window(0), spent),
            .roasMidWindows01: ratio(window(0).map { $0 + (window(1) ?? 0) }, spent),
            .modeledRevenueMid: money(modeled),
            .nullRate: nullRate(installs, withValue),
            .installsWithValue: count(withValue), .installsWithoutValue: count(installs - withValue),
            .lowTierShare: ratio(Decimal(counts[3] + counts[5]), installs == 0 ? nil : Decimal(installs)),
            .privacyHint: installs > 0 && (counts[3] + counts[5]) * 2 > installs ? .string("consolidate") : .null,
            .installsTier0: count(counts[3]), .installsTier1: count(counts[5]), .installsTier2: count(counts[7]), .installsTier3: count(counts[9]),
            .nullRateTier0: nullRate(counts[3], counts[4]), .nullRateTier1: nullRate(counts[5], counts[6]),
            .nullRateTier2: nullRate(counts[7], counts[8]), .nullRateTier3: nullRate(counts[9], counts[10]),
            .notCountedUnverifiable: count(counts[11]), .notCountedDevelopment: count(counts[12]), .notCountedPolicy: count(counts[13]),
            .copies: count(counts[14]), .forged: count(forged),
            .currencies: sourceCurrencies.isEmpty ? .null : .string(sourceCurrencies.sorted().joined(separator: ",")),
            .ratesUsed: ratesUsed.isEmpty ? .null : .string(RatesUsed.summary(ratesUsed)),
            .note: notes.isEmpty ? .null : .string(notes.joined(separator: "; ")),
            .window0Maturity: .string(maturity[0].rawValue), .window1Maturity: .string(maturity[1].rawValue),
            .window2Maturity: .string(maturity[2].rawValue),
        ]
        return [currency.map { .string($0) } ?? .null] + PerformanceMetric.allCases.map { cells[$0] ?? .null }
    }

    /// A row's money currency: the reporting one, else the one its amounts are in; nil with notes saying why when they
    /// are in several, and notes naming the amounts no exchange rate converted.
    static func currency(of currencies: Set<String>, target: String?, unconverted: Set<String>) -> (currency: String?, notes: [String]) {
        var notes: [String] = []
        var currency: String? = target ?? (currencies.count == 1 ? currencies.first : nil)
        if target == nil, currencies.count > 1 {
            notes.append("amounts in \(currencies.sorted().joined(separator: " and ")): give currency= with exchange rates to see them together")
            currency = nil
        }
        if !unconverted.isEmpty { notes.append("no exchange rate for \(unconverted.sorted().joined(separator: ", ")); those amounts are left out") }
        return (currency, notes)
    }

    /// `value` rounded half-even to `places` decimals, written without trailing zeros beyond two for amounts.
    static func decimal(_ value: Decimal, places: Int) -> String {
        var source = value
        var rounded = Decimal()
        NSDecimalRound(&rounded, &source, places, .bankers)
        var text = NSDecimalNumber(decimal: rounded).stringValue
        if places == 6 {
            // Amounts show at least two decimals, like the reports' revenue.
            if !text.contains(".") { text += ".00" } else if text.split(separator: ".")[1].count == 1 { text += "0" }
        }
        return text
    }
}
