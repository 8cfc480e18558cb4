/// What each user of an app earned, cumulated from install to the end of each of Apple's three conversion windows, in
/// one currency: the input `schema suggest` and `schema score` work on.
public struct RevenueHistory: Sendable, Equatable {
    /// Where each window ends, in hours after install: days 0-2, 3-7 and 8-35, as SKAdNetwork 4 and AdAttributionKit
    /// define them.
    public static let windowEnds: [Double] = [48, 168, 840]

    /// The currency every amount is in.
    public var currency: String
    /// Per window (0, 1, 2), per user (in the order users first appear), revenue in millionths of `currency` from
    /// install to the window's end.
    public var revenue: [[Int64]]
    /// Per event name, how many users had it within the last window.
    public var eventUsers: [String: Int]
    /// Rows after the last window's end, which no postback can report.
    public var rowsAfterLastWindow: Int
    /// The exchange rates amounts were converted with, such as `EUR>USD 1.0842 (2026-11-20)`, sorted.
    public var ratesUsed: [String]

    /// A history.
    public init(currency: String, revenue: [[Int64]], eventUsers: [String: Int] = [:], rowsAfterLastWindow: Int = 0, ratesUsed: [String] = []) {
        self.currency = currency
        self.revenue = revenue
        self.eventUsers = eventUsers
        self.rowsAfterLastWindow = rowsAfterLastWindow
        self.ratesUsed = ratesUsed
    }

    /// How many users the history holds.
    public var users: Int { revenue.first?.count ?? 0 }
}
