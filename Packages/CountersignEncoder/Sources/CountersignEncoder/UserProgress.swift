/// What a user has done since the conversion (the install, or the re-engagement) that the app reports on.
public struct UserProgress: Sendable, Equatable {
    /// How many times each event happened so far.
    public var events: [String: Int]
    /// Revenue so far, in the schema's currency.
    public var revenue: Double
    /// Hours since the conversion: they choose the window (0-48 window 0, 48-168 window 1, 168-840 window 2).
    public var hoursSinceConversion: Double

    /// Progress.
    public init(events: [String: Int] = [:], revenue: Double = 0, hoursSinceConversion: Double) {
        self.events = events
        self.revenue = revenue
        self.hoursSinceConversion = hoursSinceConversion
    }

    /// The window the hours fall in; nil after the last.
    public var window: Int? {
        switch hoursSinceConversion {
        case ..<48: 0
        case ..<168: 1
        case ..<840: 2
        default: nil
        }
    }
}
