import Foundation
import PostbackMint
import Testing
@testable import SchemaDesign

/// The dynamic programme against brute force over every boundary in cents, and its limits.
@Suite struct RevenuePartitionTests {
    /// The error of `ranges` over `cents` as the suggestion defines it, computed from the users one by one.
    static func error(_ ranges: [RevenuePartition.Range], _ cents: [Int64]) -> Double {
        cents.reduce(0) { total, amount in
            let index = ranges.lastIndex { $0.lower <= amount } ?? 0
            return total + abs(Double(amount) - Double(ranges[index].lower + ranges[index].upper) / 2)
        }
    }

    /// The least error over every choice of boundaries in whole cents: the lowest bound from 1 cent to the lowest
    /// amount, the others anywhere above it, the top one the highest amount; each range with `minimumUsers` users.
    static func bruteForce(_ cents: [Int64], ranges: Int, minimumUsers: Int) -> Double {
        let (lowest, highest) = (cents.first!, cents.last!)
        var best = Double.infinity
        func count(_ lower: Int64, _ upper: Int64, top: Bool) -> Int { cents.count { $0 >= lower && (top ? $0 <= upper : $0 < upper) } }
        func search(_ bounds: [Int64], left: Int) {
            let lower = bounds.last!
            if count(lower, highest, top: true) >= minimumUsers {
                let all = bounds + [highest]
                best = min(best, error(zip(all, all.dropFirst()).map { RevenuePartition.Range(lower: $0, upper: $1) }, cents))
            }
            guard left > 1 else { return }
            for next in stride(from: lower + 1, to: highest, by: 1) where count(lower, next, top: false) >= minimumUsers {
                search(bounds + [next], left: left - 1)
            }
        }
        for first in 1...lowest { search([first], left: ranges) }
        return best
    }

    @Test func withinHalfAPercentOfBruteForce() {
        var generator = SeededGenerator(seed: 47)
        var worst = 0.0
        for round in 0..<24 {
            let users = Int.random(in: 6...14, using: &generator)
            let cents = (0..<users).map { _ in Int64.random(in: 1...40, using: &generator) }.sorted()
            let ranges = 1 + round % 3
            let minimumUsers = 1 + round % 2
            let optimum = Self.bruteForce(cents, ranges: ranges, minimumUsers: minimumUsers)
            let found = RevenuePartition.optimal(cents, ranges: ranges, minimumUsers: minimumUsers)
            #expect(!found.isEmpty && found.count <= ranges, "round \(round), seed 47")
            #expect(found.first.map { $0.lower <= cents[0] } == true && found.last?.upper == cents.last)
            let error = Self.error(found, cents)
            #expect(error >= optimum - 1e-9, "round \(round): the programme cannot beat the exhaustive search")
            worst = max(worst, optimum == 0 ? 0 : error / optimum - 1)
        }
        #expect(worst <= 0.005, "worst gap to the brute-force optimum \(worst)")
    }

    @Test func everyRangeHoldsTheFewestUsersAsked() {
        var generator = SeededGenerator(seed: 7)
        let cents = (0..<3_000).map { _ in Int64((exp(Double.random(in: 0...7, using: &generator))).rounded(.up)) }.sorted()
        let ranges = RevenuePartition.optimal(cents, ranges: 63, minimumUsers: 25)
        #expect(ranges.count > 20 && ranges.count <= 63)
        for (index, range) in ranges.enumerated() {
            let top = index == ranges.count - 1
            let users = cents.count { $0 >= range.lower && (top ? $0 <= range.upper : $0 < range.upper) }
            #expect(users >= 25, "range \(range) holds \(users)")
        }
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upper == $1.lower }, "ranges meet without gaps")
    }

    @Test func manyDistinctAmountsAreThinnedToTheCandidateLimit() {
        let cents = (1...50_000).map { Int64($0) }
        #expect(RevenuePartition.candidates(cents).count <= RevenuePartition.candidateLimit)
        let ranges = RevenuePartition.optimal(cents, ranges: 4, minimumUsers: 1)
        #expect(ranges.count == 4 && ranges.first!.lower == 1 && ranges.last!.upper == 50_000)
        // Evenly spread amounts are split near the quarters.
        #expect(abs(Double(ranges[1].lower) - 12_500) < 500 && abs(Double(ranges[2].lower) - 25_000) < 500)
    }

    @Test func usersWhoAllPaidTheLowestAmountGetOneRange() {
        #expect(RevenuePartition.optimal([1, 1, 1], ranges: 5, minimumUsers: 2) == [RevenuePartition.Range(lower: 1, upper: 1)])
    }

    @Test func tooFewUsersGiveNoRanges() {
        #expect(RevenuePartition.optimal([5, 6], ranges: 3, minimumUsers: 3).isEmpty)
        #expect(RevenuePartition.optimal([], ranges: 3, minimumUsers: 1).isEmpty)
    }
}
