import ConversionSchema
import Testing
@testable import SchemaDesign

/// The rule that gives a user's revenue its value, as docs/schemas.md states it.
@Suite struct RevenueLadderTests {
    static func rung(_ value: String, _ range: (Double, Double)?) -> RevenueLadder.Rung {
        RevenueLadder.Rung(value: value, revenue: range.map { RevenueRange(min: $0.0, max: $0.1, currency: "USD") })
    }

    let ladder = RevenueLadder([
        rung("0", nil), rung("1", (0.01, 5)), rung("2", (5, 10)), rung("3", (20, 50)),
        rung("9", (5, 10)), // a bit-field value with the same range as 2
    ])

    @Test func zeroTakesTheValueWithoutRevenue() {
        #expect(ladder.pick(0).value == "0")
        #expect(RevenueLadder([Self.rung("4", (0, 1))]).pick(0).value == "4", "no value without revenue: the range holding 0")
    }

    @Test func aSharedBoundGoesToTheUpperRangeAndTheTopIncludesItsMax() {
        #expect(ladder.pick(4.99).value == "1")
        #expect(ladder.pick(5).value == "2", "the lowest value of the ranges that hold it")
        #expect(ladder.pick(50).value == "3")
    }

    @Test func revenueInNoRangeTakesTheNearest() {
        #expect(ladder.pick(0.001).value == "1", "below the lowest range")
        #expect(ladder.pick(14).value == "2", "in the gap 10-20, nearer 10")
        #expect(ladder.pick(15).value == "2", "a tie goes to the lower range")
        #expect(ladder.pick(16).value == "3")
        #expect(ladder.pick(500).value == "3", "above the highest range")
    }

    @Test func theDecodedRevenueIsTheRangesMiddle() {
        #expect(ladder.pick(7).decoded == 7.5)
        #expect(ladder.pick(0).decoded == 0)
    }
}
