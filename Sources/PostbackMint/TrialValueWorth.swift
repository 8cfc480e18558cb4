/// What an app's conversion values are worth, window by window, as its schema says: a trial sends, for what an install
/// spent, the value whose revenue range holds it, as the app would encode it.
public struct TrialValueWorth: Sendable {
    /// One value and the revenue range its schema gives it (0 to 0 for a value without revenue).
    public struct Option<Value: Sendable>: Sendable {
        public let value: Value
        public let min: Double
        public let max: Double

        /// An option.
        public init(value: Value, min: Double, max: Double) {
            self.value = value
            self.min = min
            self.max = max
        }

        /// How far `amount` is outside the range: 0 when the range holds it.
        public func distance(to amount: Double) -> Double { Swift.max(0, min - amount, amount - max) }
    }

    /// For windows 0, 1 and 2: the fine values the schema defines, and the coarse ones (`low`, `medium`, `high`).
    public var fine: [[Option<Int>]]
    public var coarse: [[Option<String>]]

    /// Worths for windows 0-2.
    public init(fine: [[Option<Int>]], coarse: [[Option<String>]]) {
        self.fine = fine
        self.coarse = coarse
    }

    /// The value an app that earned `amount` sends: one whose range holds it (the nearest range when none does), drawn at
    /// random among such values (bit fields give one revenue many values). Nil when there is no option.
    public static func pick<Value>(_ options: [Option<Value>], amount: Double, using random: inout some RandomNumberGenerator) -> Value? {
        guard let nearest = options.map({ $0.distance(to: amount) }).min() else { return nil }
        return options.filter { $0.distance(to: amount) == nearest }.randomElement(using: &random)?.value
    }
}
