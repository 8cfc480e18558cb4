import CountersignEncoder

/// How well one window's values tell the users' true revenue: each user gets the value an app's encoder would set for
/// their revenue (``ConversionEncoder/choose(_:_:)``, with every event the values name taken as done, since revenue
/// is what is scored), which decodes to its range's middle; per value, how many users take it and their true mean;
/// overall, true against decoded revenue per user and per paying user.
public struct RevenueScore: Sendable, Equatable {
    /// One value's figures.
    public struct Row: Sendable, Equatable {
        /// `0`-`63`, or `low`, `medium`, `high`.
        public var value: String
        /// The value's revenue range; nil without revenue.
        public var revenue: EncodingSchema.Revenue?
        public var users: Int
        /// The users' true revenue, summed.
        public var trueRevenue: Double
        /// The sum over its users of |true revenue − decoded revenue|.
        public var absoluteError: Double

        /// What the value decodes to: its range's middle, 0 without revenue.
        public var decoded: Double { revenue?.midpoint ?? 0 }
        /// Mean true revenue of the value's users.
        public var trueMean: Double { users == 0 ? 0 : trueRevenue / Double(users) }
        /// Mean |true − decoded| of the value's users.
        public var meanAbsoluteError: Double { users == 0 ? 0 : absoluteError / Double(users) }
    }

    /// One row per distinct revenue range (its lowest value, which the encoder picks among equals) and the lowest value
    /// without revenue, in value order.
    public var rows: [Row]
    public var users: Int
    public var payingUsers: Int
    public var trueRevenue: Double
    public var decodedRevenue: Double
    /// Decoded revenue of the paying users alone.
    public var decodedPayingRevenue: Double

    /// Scores `rules` (one window's fine or coarse values) against the users' revenue in millionths.
    public init<Value: Comparable & Sendable & Codable>(rules all: [EncodingSchema.Rule<Value>], revenue micros: [Int64], label: (Value) -> String) {
        var rules: [EncodingSchema.Rule<Value>] = []
        for rule in all.sorted(by: { $0.value < $1.value }) where !rules.contains(where: { $0.revenue == rule.revenue }) {
            rules.append(EncodingSchema.Rule(value: rule.value, events: rule.events.filter { $0.revenue == true }, revenue: rule.revenue))
        }
        var rows = rules.map { Row(value: label($0.value), revenue: $0.revenue, users: 0, trueRevenue: 0, absoluteError: 0) }
        let index = Dictionary(rules.enumerated().map { (label($1.value), $0) }) { first, _ in first }
        var (paying, total, decodedTotal, decodedPaying) = (0, 0.0, 0.0, 0.0)
        // Users with the same revenue get the same value: each distinct amount is encoded once.
        var chosen: [Int64: Int] = [:]
        for amount in micros {
            let revenue = Double(amount) / 1_000_000
            let position: Int
            if let known = chosen[amount] {
                position = known
            } else {
                guard let rule = ConversionEncoder.choose(rules, UserProgress(revenue: revenue, hoursSinceConversion: 0)), let found = index[label(rule.value)] else { continue }
                position = found
                chosen[amount] = found
            }
            let decoded = rows[position].decoded
            rows[position].users += 1
            rows[position].trueRevenue += revenue
            rows[position].absoluteError += abs(revenue - decoded)
            total += revenue
            decodedTotal += decoded
            if amount > 0 {
                paying += 1
                decodedPaying += decoded
            }
        }
        self.rows = rows
        users = micros.count
        payingUsers = paying
        trueRevenue = total
        decodedRevenue = decodedTotal
        decodedPayingRevenue = decodedPaying
    }

    /// The sum over users of |true − decoded|.
    public var absoluteError: Double { rows.reduce(0) { $0 + $1.absoluteError } }
}
