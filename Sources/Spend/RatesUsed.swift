import Foundation

/// The exchange rates a figure was converted with, as one line an analyst reads: per currency pair, by date; a pair
/// with more than ``listedPerPair`` rates shows its first and last and how many (issue 49, finding 8: up to 30 rates,
/// sorted by their text).
public enum RatesUsed {
    /// Rates of one pair listed one by one at most.
    public static let listedPerPair = 3

    /// `labels` (``CurrencyConverter``'s names, such as `EUR>USD 1.0842 (2026-11-20)`) as one line, pairs by name and
    /// rates by day, joined with `; `.
    public static func summary(_ labels: some Collection<String>) -> String {
        let parsed = labels.map { label -> (pair: String, rate: String, day: String) in
            let parts = label.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let open = parts[1].lastIndex(of: "("), parts[1].hasSuffix(")") else { return (label, "", "") }
            let rate = parts[1][..<open].trimmingCharacters(in: .whitespaces)
            return (parts[0], rate, String(parts[1][parts[1].index(after: open)..<parts[1].index(before: parts[1].endIndex)]))
        }
        return Dictionary(grouping: parsed, by: \.pair).sorted { $0.key < $1.key }.map { pair, rates in
            let byDay = rates.sorted { ($0.day, $0.rate) < ($1.day, $1.rate) }
            guard byDay.count > listedPerPair, let first = byDay.first, let last = byDay.last else {
                return byDay.map { $0.day.isEmpty ? $0.pair : "\(pair) \($0.rate) (\($0.day))" }.joined(separator: "; ")
            }
            return "\(pair) \(first.rate) (\(first.day)) to \(last.rate) (\(last.day)), \(byDay.count) rates"
        }.joined(separator: "; ")
    }
}
