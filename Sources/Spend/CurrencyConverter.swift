import Foundation

/// Converts amounts into one currency with the user's daily rates: the rate of the amount's day, else the latest
/// earlier one of the same pair, else the inverse of the opposite pair; and names the rate it used.
public struct CurrencyConverter: Sendable {
    /// The currency amounts are converted into; nil converts nothing.
    public let target: String?
    /// Rates by "FROM>TO", oldest first.
    private let byPair: [String: [ExchangeRate]]

    /// A converter into `target` with `rates`.
    public init(target: String?, rates: [ExchangeRate]) {
        self.target = target
        byPair = Dictionary(grouping: rates) { "\($0.from)>\($0.to)" }.mapValues { $0.sorted { $0.day < $1.day } }
    }

    /// The rate from `currency` into the target on `day` (YYYY-MM-DD), and how to name it; nil when none is known.
    public func rate(from currency: String, on day: String) -> (rate: Decimal, label: String)? {
        guard let target, currency != target else { return (1, "") }
        if let rate = Self.latest(byPair["\(currency)>\(target)"], onOrBefore: day) {
            return (rate.rate, "\(currency)>\(target) \(rate.rate) (\(rate.day))")
        }
        if let rate = Self.latest(byPair["\(target)>\(currency)"], onOrBefore: day) {
            return (1 / rate.rate, "\(currency)>\(target) 1/\(rate.rate) (\(rate.day))")
        }
        return nil
    }

    /// `micros` (millionths of `currency`) in millionths of the target on `day`, rounded half up, and the rate's name;
    /// nil when no rate is known or the result does not fit.
    public func convert(micros: Int64, from currency: String, on day: String) -> (micros: Int64, label: String)? {
        guard let (rate, label) = rate(from: currency, on: day) else { return nil }
        if rate == 1 { return (micros, label) }
        var product = Decimal(micros) * rate
        var rounded = Decimal()
        NSDecimalRound(&rounded, &product, 0, .plain)
        guard rounded < Decimal(Int64.max) else { return nil }
        return (NSDecimalNumber(decimal: rounded).int64Value, label)
    }

    /// The last of `rates` (oldest first) whose day is at or before `day`, found by halving.
    private static func latest(_ rates: [ExchangeRate]?, onOrBefore day: String) -> ExchangeRate? {
        guard let rates else { return nil }
        var (low, high) = (0, rates.count)
        while low < high {
            let middle = (low + high) / 2
            if rates[middle].day <= day { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : rates[low - 1]
    }
}
