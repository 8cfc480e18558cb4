/// The measures every report row carries, each defined once in words an analyst uses. docs/metrics.md, the OpenAPI
/// document (`ReportRow`) and `countersign report --help` show these same definitions; a test holds them together.
public enum ReportMetric: String, Sendable, CaseIterable {
    case postbacks
    case counted
    case installs
    case reEngagements = "re_engagements"
    case installPostbacks = "install_postbacks"
    case reEngagementPostbacks = "re_engagement_postbacks"
    case winning
    case nonWinning = "non_winning"
    case events
    case revenueMin = "revenue_min"
    case revenueMax = "revenue_max"
    case revenueMid = "revenue_mid"
    case shareWithoutValue = "share_without_value"
    case shareWithUnsignedValue = "share_with_unsigned_value"
    case shareWithCountry = "share_with_country"
    case duplicates
    case replays

    /// What the metric counts: which postbacks, which windows, winning or not, and its unit.
    public var definition: String {
        switch self {
        case .postbacks:
            "Distinct postbacks in the report's scope, each counted once however often it arrived: every conversion window, installs and re-engagements, winning and not. Without include_uncounted only postbacks that count (see counted)."
        case .counted:
            "Postbacks that count: verified with Apple's production key and accepted by the server's ad-network list and the app registry, first copy only. Development and unverifiable postbacks never count. Equals postbacks unless include_uncounted is asked."
        case .installs:
            "Installs as an MMP counts them: one per winning (did-win true) first-window (window 0) install postback (conversion-type download or redownload) that counts. Later windows of the same install and non-winning postbacks are not installs."
        case .reEngagements:
            "AdAttributionKit re-engagements, counted like installs: one per winning first-window postback of conversion-type re-engagement that counts. Apart from installs."
        case .installPostbacks:
            "Install postbacks (download or redownload) of every window, winning or not: one install can send up to three winning and one non-winning postback. What the installs column meant before version 0.17."
        case .reEngagementPostbacks:
            "Re-engagement postbacks of every window, winning or not."
        case .winning:
            "Postbacks with did-win true: the network whose ad won the attribution (SKAdNetwork before 3.0 sends winners only)."
        case .nonWinning:
            "Postbacks with did-win false: networks whose ad was seen but did not win; they come for window 0 only and carry no conversion value."
        case .events:
            "Business events the app's schema decodes from these postbacks' conversion values; an event with a count adds its count."
        case .revenueMin:
            "The low end of the revenue the schema gives these postbacks' conversion values, summed exactly in the row's currency (a decimal such as 7622.45). Conversion values are not signed by Apple."
        case .revenueMax:
            "The high end of that revenue range, summed exactly in the row's currency."
        case .revenueMid:
            "The middle of the revenue range: (revenue_min + revenue_max) / 2, exactly."
        case .shareWithoutValue:
            "Share (0 to 1) of the postbacks that carry neither a fine nor a coarse conversion value: Apple's privacy threshold was not met, or the postback did not win."
        case .shareWithUnsignedValue:
            "Share (0 to 1) of the postbacks that carry a fine or coarse conversion value (a value Apple does not sign)."
        case .shareWithCountry:
            "Share (0 to 1) of the postbacks that carry the unsigned country-code, which Apple adds only at crowd-anonymity tier 3: a breakdown by country covers only this share."
        case .duplicates:
            "Later copies exactly like a stored postback: received, acknowledged, never counted."
        case .replays:
            "Later copies of a stored postback whose unsigned fields differ (a changed conversion value, for example): received, acknowledged, never counted."
        }
    }

    /// Whether the metric is a money amount (an exact decimal in the row's currency).
    public var isMoney: Bool { [.revenueMin, .revenueMax, .revenueMid].contains(self) }
}
