/// How well one window's values tell the users' true revenue: per value, how many users take it, their true mean and
/// what it decodes to; overall, true against decoded revenue per user and per paying user.
public struct RevenueScore: Sendable, Equatable {
    /// One value's figures.
    public struct Row: Sendable, Equatable {
        public var rung: RevenueLadder.Rung
        public var users: Int
        /// The users' true revenue, summed.
        public var trueRevenue: Double
        /// The sum over its users of |true revenue − decoded revenue|.
        public var absoluteError: Double

        /// Mean true revenue of the value's users.
        public var trueMean: Double { users == 0 ? 0 : trueRevenue / Double(users) }
        /// Mean |true − decoded| of the value's users.
        public var meanAbsoluteError: Double { users == 0 ? 0 : absoluteError / Double(users) }
    }

    /// The window (0, 1, 2).
    public var window: Int
    /// Whether these are coarse values.
    public var coarse: Bool
    /// Values in ladder order (the zero value first), each with at least one user or a range.
    public var rows: [Row]
    public var users: Int
    public var payingUsers: Int
    public var trueRevenue: Double
    public var decodedRevenue: Double
    /// Decoded revenue of the paying users alone.
    public var decodedPayingRevenue: Double

    /// Scores `ladder` against the users' revenue in millionths.
    public init(ladder: RevenueLadder, revenue micros: [Int64], window: Int, coarse: Bool) {
        var rows = (ladder.zero.map { [$0] } ?? []) + ladder.ranges
        var position: [String: Int] = [:]
        for (index, rung) in rows.enumerated() { position[rung.value] = index }
        var counts = [Int](repeating: 0, count: rows.count)
        var sums = [Double](repeating: 0, count: rows.count)
        var errors = [Double](repeating: 0, count: rows.count)
        var (paying, total, decodedTotal, decodedPaying) = (0, 0.0, 0.0, 0.0)
        for amount in micros {
            let revenue = Double(amount) / 1_000_000
            let rung = ladder.pick(revenue)
            let index: Int
            if let known = position[rung.value] {
                index = known
            } else {
                index = rows.count
                position[rung.value] = index
                rows.append(rung)
                counts.append(0)
                sums.append(0)
                errors.append(0)
            }
            counts[index] += 1
            sums[index] += revenue
            errors[index] += abs(revenue - rung.decoded)
            total += revenue
            decodedTotal += rung.decoded
            if amount > 0 {
                paying += 1
                decodedPaying += rung.decoded
            }
        }
        self.rows = rows.indices.map { Row(rung: rows[$0], users: counts[$0], trueRevenue: sums[$0], absoluteError: errors[$0]) }
        self.window = window
        self.coarse = coarse
        users = micros.count
        payingUsers = paying
        trueRevenue = total
        decodedRevenue = decodedTotal
        decodedPayingRevenue = decodedPaying
    }

    /// The sum over users of |true − decoded|.
    public var absoluteError: Double { rows.reduce(0) { $0 + $1.absoluteError } }
}
