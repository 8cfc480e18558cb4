import Foundation

/// Decimal amounts as people and exports write them, read exactly: no floating point between the file and the sums.
public enum MoneyText {
    /// The most an amount may be (a trillion units): beyond it a column holds something else.
    public static let maximum: Int64 = 1_000_000_000_000

    /// `text` (digits, at most one `.` and six decimals, no sign) in whole millionths; nil for anything else.
    public static func micros(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty || parts.count == 2, whole.count <= 13,
              whole.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        var fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= 6, fraction.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              !(whole.isEmpty && fraction.isEmpty) else { return nil }
        fraction += String(repeating: "0", count: 6 - fraction.count)
        guard let units = Int64(whole.isEmpty ? "0" : whole), units <= maximum, let millionths = Int64(fraction) else { return nil }
        return units * 1_000_000 + millionths
    }

    /// A positive exchange rate such as `1.0842` or `158.31` (at most 12 decimals), exactly; nil for anything else.
    public static func rate(_ text: String) -> Decimal? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, whole.count <= 9, (parts.count == 1 || (1...12).contains(parts[1].count)),
              (whole + (parts.count == 2 ? parts[1] : "")).utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              !whole.isEmpty, let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), value > 0 else { return nil }
        return value
    }
}
