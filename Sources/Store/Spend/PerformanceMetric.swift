/// The measures of the performance report (`countersign performance`, `GET /v1/performance`): what installs cost and
/// returned, and what networks claimed against what Apple signed. Each is defined once; docs/metrics.md, the OpenAPI
/// document and `countersign performance --help` show these same definitions (a test holds them together).
public enum PerformanceMetric: String, Sendable, CaseIterable {
    case installs
    case reEngagements = "re_engagements"
    case claimedInstalls = "claimed_installs"
    case claimedReEngagements = "claimed_re_engagements"
    case installGap = "install_gap"
    case installRatio = "install_ratio"
    case claimedWithoutPostback = "claimed_without_postback"
    case impressions
    case clicks
    case spend
    case ecpi
    case cpi
    case revenueMin = "revenue_min"
    case revenueMax = "revenue_max"
    case revenueMid = "revenue_mid"
    case revenueMidWindow0 = "revenue_mid_window_0"
    case revenueMidWindow1 = "revenue_mid_window_1"
    case revenueMidWindow2 = "revenue_mid_window_2"
    case reEngagementRevenueMin = "re_engagement_revenue_min"
    case reEngagementRevenueMax = "re_engagement_revenue_max"
    case reEngagementRevenueMid = "re_engagement_revenue_mid"
    case roasMin = "roas_min"
    case roasMax = "roas_max"
    case roasMid = "roas_mid"
    case roasMidWindow0 = "roas_mid_window_0"
    case roasMidWindows01 = "roas_mid_windows_0_1"
    case modeledRevenueMid = "modeled_revenue_mid"
    case nullRate = "null_rate"
    case installsWithValue = "installs_with_value"
    case installsWithoutValue = "installs_without_value"
    case installsTier0 = "installs_tier_0"
    case installsTier1 = "installs_tier_1"
    case installsTier2 = "installs_tier_2"
    case installsTier3 = "installs_tier_3"
    case nullRateTier0 = "null_rate_tier_0"
    case nullRateTier1 = "null_rate_tier_1"
    case nullRateTier2 = "null_rate_tier_2"
    case nullRateTier3 = "null_rate_tier_3"
    case lowTierShare = "low_tier_share"
    case privacyHint = "privacy_hint"
    case notCountedUnverifiable = "not_counted_unverifiable"
    case notCountedDevelopment = "not_counted_development"
    case notCountedPolicy = "not_counted_policy"
    case copies
    case forged
    case currencies
    case ratesUsed = "rates_used"
    case note
    case window0Maturity = "window_0_maturity"
    case window1Maturity = "window_1_maturity"
    case window2Maturity = "window_2_maturity"

    /// What the metric is, in words an analyst uses.
    /// The decimals a table shows (amounts and returns in cents, shares to a tenth of a percent); nil for counts and
    /// text. CSV and JSON keep every figure exact.
    public var tableDecimals: Int? {
        switch self {
        case .spend, .ecpi, .cpi, .revenueMin, .revenueMax, .revenueMid, .revenueMidWindow0, .revenueMidWindow1, .revenueMidWindow2,
             .reEngagementRevenueMin, .reEngagementRevenueMax, .reEngagementRevenueMid, .modeledRevenueMid,
             .roasMin, .roasMax, .roasMid, .roasMidWindow0, .roasMidWindows01: 2
        case .installRatio, .nullRate, .lowTierShare, .nullRateTier0, .nullRateTier1, .nullRateTier2, .nullRateTier3: 3
        default: nil
        }
    }

    public var definition: String {
        switch self {
        case .installs: "Verified installs, as the reports count them: one per winning first-window install postback that counts (docs/metrics.md)."
        case .reEngagements: "Verified AdAttributionKit re-engagements, counted like installs."
        case .claimedInstalls: "Installs the network claims in its imported report (docs/spend.md); empty when no report gives them."
        case .claimedReEngagements: "Re-engagements the network claims in its imported report."
        case .installGap: "claimed_installs minus installs: how many more installs the network claims than Apple signed (negative: fewer)."
        case .installRatio: "installs divided by claimed_installs: the share of the claimed installs that Apple signed."
        case .claimedWithoutPostback: "Installs the network claims beyond those Apple signed a postback for: claimed_installs minus installs when that is more than 0, else 0; empty without a claim."
        case .impressions: "Impressions in the network's imported report."
        case .clicks: "Clicks (taps) in the network's imported report."
        case .spend: "What the network charged, from its imported report, an exact decimal in the row's currency."
        case .ecpi: "Effective cost per install: spend divided by installs (verified)."
        case .cpi: "Cost per install as the network counts it: spend divided by claimed_installs."
        case .revenueMin: "The low end of the revenue the schema gives the conversion values of these installs' postbacks (install postbacks only: re-engagements' revenue is apart), every window, in the row's currency."
        case .revenueMax: "The high end of that revenue, every window."
        case .revenueMid: "The middle of that revenue, (revenue_min + revenue_max) / 2, every window."
        case .revenueMidWindow0: "The middle of the revenue of window 0 postbacks (days 0-2 after install)."
        case .revenueMidWindow1: "The middle of the revenue of window 1 postbacks (days 3-7)."
        case .revenueMidWindow2: "The middle of the revenue of window 2 postbacks (days 8-35)."
        case .reEngagementRevenueMin: "The low end of the revenue the schema gives AdAttributionKit re-engagement postbacks, every window, in the row's currency: revenue from users who came back, kept out of the installs' revenue and ROAS."
        case .reEngagementRevenueMax: "The high end of the re-engagement revenue, every window."
        case .reEngagementRevenueMid: "The middle of the re-engagement revenue, every window."
        case .roasMin: "Return on ad spend, low end: revenue_min divided by spend (every window: days 0-35)."
        case .roasMax: "Return on ad spend, high end: revenue_max divided by spend."
        case .roasMid: "Return on ad spend at the middle of the revenue range: revenue_mid divided by spend (days 0-35)."
        case .roasMidWindow0: "Return on ad spend of the first window only: revenue_mid_window_0 divided by spend (days 0-2)."
        case .roasMidWindows01: "Return on ad spend of windows 0 and 1: (revenue_mid_window_0 + revenue_mid_window_1) divided by spend (days 0-7)."
        case .modeledRevenueMid: "Modeled, not measured: revenue_mid divided by the share of installs that carry a conversion value, for the installs Apple's privacy thresholds left without one."
        case .nullRate: "Share (0 to 1) of installs whose postback carries no conversion value (neither fine nor coarse)."
        case .installsWithValue: "Installs whose postback carries a conversion value, fine or coarse: the installs whose revenue the schema gives."
        case .installsWithoutValue: "Installs whose postback carries none, as Apple's privacy thresholds withhold it: their revenue is unknown, never counted as zero (modeled_revenue_mid adjusts for them)."
        case .installsTier0: "Installs whose postback's fields put it at crowd-anonymity tier 0 (the lowest tier they allow)."
        case .installsTier1: "Installs at crowd-anonymity tier 1."
        case .installsTier2: "Installs at crowd-anonymity tier 2."
        case .installsTier3: "Installs at crowd-anonymity tier 3."
        case .nullRateTier0: "null_rate of the installs at tier 0."
        case .nullRateTier1: "null_rate of the installs at tier 1."
        case .nullRateTier2: "null_rate of the installs at tier 2."
        case .nullRateTier3: "null_rate of the installs at tier 3."
        case .lowTierShare: "Share (0 to 1) of installs at crowd-anonymity tier 0 or 1, whose postbacks carry at most a coarse value and two source-identifier digits."
        case .privacyHint: "consolidate when more than half of the row's installs are at tier 0 or 1: the source stays under Apple's privacy thresholds, and fewer campaigns or ad groups would give each more installs and finer postbacks; empty otherwise."
        case .notCountedUnverifiable: "Winning first-window install postbacks kept but not counted because nobody can verify them yet (unknown key or version), naming this network as claimed by an unverified body (anyone can raise it; never counted)."
        case .notCountedDevelopment: "Winning first-window install postbacks signed with Apple's development keys: never counted."
        case .notCountedPolicy: "Winning first-window install postbacks Apple signed that the rules in force leave out (an app outside the registry, an ad network not accepted)."
        case .copies: "Later copies (duplicates and replays) of winning first-window install postbacks whose network Apple's signature proves (verified, counted or not): received, never counted again. Copies of unverifiable postbacks are left out: their network is only claimed."
        case .forged: "Bodies whose signature or shape failed (refused at the door, or found forged by reverify), naming this network and app as claimed by an unverified body (anyone can raise it; never counted)."
        case .currencies: "The currencies the row's revenue and spend are in before any conversion, comma-separated."
        case .ratesUsed: "The exchange rates the row's amounts were converted with, by pair and day, such as EUR>USD 1.0842 (2026-11-20); a pair with more than three shows its first and last and how many; empty without a reporting currency."
        case .note: "Why a figure is empty: amounts in several currencies without a reporting currency, or an amount without an exchange rate."
        case .window0Maturity: "Whether window 0 postbacks (days 0-2 after install) can still land on the row's days: not_due (none can have arrived yet), in_flight (some may have arrived and more may come), or closed (its figures are final)."
        case .window1Maturity: "The same for window 1 (days 3-7)."
        case .window2Maturity: "The same for window 2 (days 8-35)."
        }
    }

    /// Whether the metric is a money amount in the row's currency.
    public var isMoney: Bool {
        [.spend, .ecpi, .cpi, .revenueMin, .revenueMax, .revenueMid, .revenueMidWindow0, .revenueMidWindow1, .revenueMidWindow2,
         .reEngagementRevenueMin, .reEngagementRevenueMax, .reEngagementRevenueMid, .modeledRevenueMid].contains(self)
    }
}
