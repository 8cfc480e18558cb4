import Testing
import Spend

/// `rates_used` reads by pair and day, and stays one short line however many days a report spans (issue 49, finding 8:
/// up to 30 rates sorted by their text).
@Suite struct RatesUsedTests {
    @Test func ratesAreListedByDayAndLongRunsSummarised() {
        let few = ["EUR>USD 1.09 (2026-11-21)", "EUR>USD 1.0842 (2026-11-20)", "GBP>USD 1/0.79 (2026-11-20)"]
        #expect(RatesUsed.summary(few) == "EUR>USD 1.0842 (2026-11-20); EUR>USD 1.09 (2026-11-21); GBP>USD 1/0.79 (2026-11-20)")
        // Thirty days of one pair, given in an order where the text would sort 1.10 before 1.9.
        let month = (1...30).map { day in "EUR>USD \(day % 2 == 0 ? "1.10" : "1.9") (2026-11-\(day < 10 ? "0" : "")\(day))" }.shuffled()
        #expect(RatesUsed.summary(month) == "EUR>USD 1.9 (2026-11-01) to 1.10 (2026-11-30), 30 rates")
        #expect(RatesUsed.summary(month + ["JPY>USD 0.0066 (2026-11-03)"]).hasSuffix("; JPY>USD 0.0066 (2026-11-03)"))
    }
}
