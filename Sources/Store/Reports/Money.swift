/// Revenue as exact decimals: the store sums whole millionths of a currency unit (integers), never floating-point
/// amounts, and reports write those sums as decimal text.
public enum Money {
    /// Millionths of a unit in one unit.
    static let microsPerUnit: Int64 = 1_000_000

    /// SQL for a stored amount (a double such as 4.99, or NULL) in whole millionths, 0 for NULL; the same text on both
    /// engines.
    static func micros(_ amount: String) -> String {
        "CAST(round(coalesce(\(amount), 0) * 1000000) AS BIGINT)"
    }

    /// `micros` millionths as a decimal number, with at least two decimals and no trailing zeros beyond them:
    /// 7622450000 → `7622.45`, 5000000 → `5.00`.
    public static func decimal(micros: Int64) -> String {
        decimal(micros.magnitude, negative: micros < 0, scale: 6)
    }

    /// Half of `micros` millionths (the middle of a range summed as min + max), exactly: 3 → `0.0000015`.
    public static func decimal(halfOfMicros micros: Int64) -> String {
        // Half a millionth is five ten-millionths.
        let (tenMillionths, overflow) = micros.magnitude.multipliedReportingOverflow(by: 5)
        guard !overflow else { return decimal(micros.magnitude / 2, negative: micros < 0, scale: 6) }
        return decimal(tenMillionths, negative: micros < 0, scale: 7)
    }

    private static func decimal(_ magnitude: UInt64, negative: Bool, scale: Int) -> String {
        var divisor: UInt64 = 1
        for _ in 0..<scale { divisor *= 10 }
        // Trailing zeros go in whole numbers, beyond the two decimals kept.
        var (fraction, places) = (magnitude % divisor, scale)
        while places > 2, fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        let digits = String(fraction)
        return (negative && magnitude != 0 ? "-" : "") + String(magnitude / divisor) + "." + String(repeating: "0", count: places - digits.utf8.count) + digits
    }
}
