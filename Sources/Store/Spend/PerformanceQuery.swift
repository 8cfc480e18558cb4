import Foundation
import Postback

/// A performance report request: what installs cost and returned, and what networks claimed against what Apple signed,
/// grouped by day, app, ad network, campaign or country. Validated against closed lists, so no caller text reaches SQL.
public struct PerformanceQuery: Sendable, Equatable {
    /// A way to group.
    public enum Dimension: String, Sendable, CaseIterable {
        case day, week, app, appName = "app_name", adNetwork = "ad_network", adNetworkName = "ad_network_name", campaign, country
        case conversionType = "conversion_type"

        /// What the dimension's values are.
        public var definition: String {
            switch self {
            case .day: "The day in the report's time zone: of the install (estimated from Apple's timers, basis=install, the default), or of the postback's arrival (basis=arrival); the network's reporting day for what it claims and spent."
            case .week: "The ISO 8601 week of that day."
            case .app: "The advertised app's App Store id."
            case .appName: "The app's name in the app registry, else its id."
            case .adNetwork: "The ad network id."
            case .adNetworkName: "The ad network's name from the registry, else its id."
            case .campaign: "The campaign: the network's campaign id from the dated mapping in force on the install day where one names the postback, else digits 1-2 of the source identifier (the campaign-id before SKAdNetwork 4.0); and the campaign column of the network's report."
            case .country: "The unsigned country-code of the postbacks (empty when Apple sent none), and the country column of the network's report."
            case .conversionType: "download (a new install), redownload or re-engagement, as Apple signed it; networks' reports give spend and claims for no type, so they show on the rows with an empty conversion_type."
            }
        }
    }

    /// Which day a postback counts on.
    public typealias Basis = DayBasis

    public var from: Date?
    public var to: Date?
    public var timeZone = ReportTimeZone.utc
    public var app: AppID?
    public var adNetwork: String?
    public var campaign: String?
    public var country: String?
    public var groupBy: [Dimension] = []
    /// The reporting currency every amount is converted into with the imported exchange rates; nil keeps each amount in
    /// its own currency.
    public var currency: String?
    public var basis = Basis.install
    /// The time the windows' maturity is judged at; nil: when the report is made.
    public var asOf: Date?

    public init() {}


    /// The local day (`YYYY-MM-DD` in the report's zone) of `date`.
    func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone.zone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
