/// The revenue ranges that decode a group of paying users best: the partition of their sorted amounts into at most
/// `ranges` consecutive ranges, each holding at least `minimumUsers` users, that makes the sum over users of
/// |true revenue − the middle of the user's range| smallest.
///
/// Found by dynamic programming over boundaries, not by a heuristic. A range is `[lower, upper)` (the top one
/// `[lower, upper]`, its upper bound the largest amount), and its boundaries are amounts in cents chosen among the
/// candidates: each distinct amount and the cent after the amount below it (the two ends of the gap between them),
/// and one cent as the lowest bound. With more distinct amounts than ``candidateLimit`` allows, the candidates are
/// those at evenly spaced ranks of the users, and the partition is optimal among them.
public enum RevenuePartition {
    /// The most boundary candidates: the costs of every pair are held at once (32 MB at 2,048).
    public static let candidateLimit = 2_048

    /// One range in cents: users with `lower <= amount < upper`, or `<= upper` for the top range.
    public struct Range: Sendable, Equatable {
        public var lower: Int64
        public var upper: Int64
    }

    /// The best ranges for `cents` (ascending, each at least 1), or none when there are fewer users than
    /// `minimumUsers`.
    public static func optimal(_ cents: [Int64], ranges: Int, minimumUsers: Int) -> [Range] {
        precondition(ranges >= 1 && minimumUsers >= 1, "at least one range and one user a range")
        guard cents.count >= minimumUsers, let lowest = cents.first, let highest = cents.last else { return [] }
        let candidates = candidates(cents)
        let count = candidates.count
        // Every user paid the one lowest amount: a single range of it.
        guard count > 1 else { return [Range(lower: lowest, upper: highest)] }
        // start[c]: the first user at or above candidate c; the last candidate (the highest amount) ends at the end.
        var start = [Int](repeating: 0, count: count)
        var user = 0
        for (index, candidate) in candidates.enumerated() {
            while user < cents.count, cents[user] < candidate { user += 1 }
            start[index] = user
        }
        func end(_ candidate: Int) -> Int { candidate == count - 1 ? cents.count : start[candidate] }
        var prefix = [Double](repeating: 0, count: cents.count + 1)
        for (index, amount) in cents.enumerated() { prefix[index + 1] = prefix[index] + Double(amount) }

        // cost[b * count + a]: the error of one range from candidate a to candidate b; infinity with too few users.
        // The users below the range's middle are found by halving, from where the previous (lower) middle split them.
        var cost = [Double](repeating: .infinity, count: count * count)
        for a in 0..<(count - 1) {
            let first = start[a]
            var split = first
            for b in (a + 1)..<count {
                let last = end(b)
                guard last - first >= minimumUsers else { continue }
                let doubledMiddle = candidates[a] + candidates[b]
                var high = last
                while split < high {
                    let middle = (split + high) / 2
                    if 2 * cents[middle] < doubledMiddle { split = middle + 1 } else { high = middle }
                }
                let middle = Double(doubledMiddle) / 2
                let below = middle * Double(split - first) - (prefix[split] - prefix[first])
                let above = (prefix[last] - prefix[split]) - middle * Double(last - split)
                cost[b * count + a] = below + above
            }
        }

        // best[k][b]: the least error covering every user below candidate b with k + 1 ranges, the first starting at
        // a candidate at or below the lowest amount.
        var best = [[Double]](repeating: [Double](repeating: .infinity, count: count), count: ranges)
        var parent = [[Int32]](repeating: [Int32](repeating: -1, count: count), count: ranges)
        for a in 0..<count where candidates[a] <= lowest {
            for b in (a + 1)..<count where cost[b * count + a] < best[0][b] {
                best[0][b] = cost[b * count + a]
                parent[0][b] = Int32(a)
            }
        }
        for k in stride(from: 1, to: ranges, by: 1) {
            for b in 1..<count {
                var least = Double.infinity
                var from: Int32 = -1
                let row = b * count
                for a in 1..<b {
                    let total = best[k - 1][a] + cost[row + a]
                    if total < least {
                        least = total
                        from = Int32(a)
                    }
                }
                best[k][b] = least
                parent[k][b] = from
            }
        }
        var chosen = -1
        for k in 0..<ranges where best[k][count - 1] < (chosen < 0 ? .infinity : best[chosen][count - 1]) { chosen = k }
        guard chosen >= 0 else { return [] }
        var bounds: [Int64] = [highest]
        var b = count - 1
        for k in stride(from: chosen, through: 0, by: -1) {
            let a = Int(parent[k][b])
            bounds.append(candidates[a])
            b = a
        }
        bounds.reverse()
        return zip(bounds, bounds.dropFirst()).map { Range(lower: $0, upper: $1) }
    }

    /// The boundary candidates of `cents`, ascending: one cent, each distinct amount and the cent after the one below
    /// it (thinned to evenly spaced ranks when there are too many), then evenly spaced cents inside the gaps between
    /// them with what ``candidateLimit`` leaves, which is every cent when the amounts span fewer cents than the limit.
    static func candidates(_ cents: [Int64]) -> [Int64] {
        var distinct: [Int64] = []
        let wanted = candidateLimit / 2 - 1
        var previous: Int64 = -1
        for amount in cents where amount != previous {
            distinct.append(amount)
            previous = amount
        }
        if distinct.count > wanted {
            var thinned: [Int64] = []
            for rank in 0..<wanted {
                let amount = cents[rank * (cents.count - 1) / (wanted - 1)]
                if thinned.last != amount { thinned.append(amount) }
            }
            distinct = thinned
        }
        var base: [Int64] = [1]
        var below: Int64 = 0
        for amount in distinct {
            if below + 1 < amount, below > 0 { base.append(below + 1) }
            if base.last != amount { base.append(amount) }
            below = amount
        }
        // The cents strictly inside each gap between neighbouring candidates, shared out in proportion to the gaps.
        let spare = Int64(candidateLimit - base.count)
        let inside = zip(base, base.dropFirst()).reduce(Int64(0)) { $0 + ($1.1 - $1.0 - 1) }
        guard spare > 0, inside > 0 else { return base }
        var candidates: [Int64] = []
        for (low, high) in zip(base, base.dropFirst()) {
            candidates.append(low)
            let gap = high - low - 1
            let points = inside <= spare ? gap : gap * spare / inside
            guard points > 0 else { continue }
            for step in 1...points { candidates.append(low + step * (gap + 1) / (points + 1)) }
        }
        candidates.append(base[base.count - 1])
        return candidates
    }
}
