/// The measures of the cohort curves (`countersign cohorts`, `GET /v1/cohorts`): what an install returned by days 2, 7
/// and 35, over the install weeks whose windows have closed. Each is defined once; docs/metrics.md, the OpenAPI document
/// and `countersign cohorts --help` show these same definitions (a test holds them together).
public enum CohortMetric: String, Sendable, CaseIterable {
    case installs
    case spend
    case cohortInstallsD2 = "cohort_installs_d2"
    case revenuePerInstallD2 = "revenue_per_install_d2"
    case roasD2 = "roas_d2"
    case cohortInstallsD7 = "cohort_installs_d7"
    case revenuePerInstallD7 = "revenue_per_install_d7"
    case roasD7 = "roas_d7"
    case cohortInstallsD35 = "cohort_installs_d35"
    case revenuePerInstallD35 = "revenue_per_install_d35"
    case roasD35 = "roas_d35"
    case ratesUsed = "rates_used"
    case note

    /// What the metric is, in words an analyst uses.
    public var definition: String {
        switch self {
        case .installs: "Verified installs of the row's install weeks, as performance counts them, whether their windows have closed or not."
        case .spend: "What the networks charged on those weeks' days, from their imported reports, in the row's currency."
        case .cohortInstallsD2: "Installs of the row's install weeks whose window 0 has closed (docs/metrics.md, Maturity): the cohorts behind the D2 figures."
        case .revenuePerInstallD2: "Revenue by day 2 per install: the middle of window 0's revenue of those cohorts over their installs."
        case .roasD2: "Return on ad spend by day 2: window 0's revenue (middle) of those cohorts over their spend."
        case .cohortInstallsD7: "Installs of the row's install weeks whose window 1 has closed: the cohorts behind the D7 figures."
        case .revenuePerInstallD7: "Revenue by day 7 per install: windows 0 and 1 of those cohorts over their installs."
        case .roasD7: "Return on ad spend by day 7: windows 0 and 1 of those cohorts over their spend."
        case .cohortInstallsD35: "Installs of the row's install weeks whose window 2 has closed: the cohorts behind the D35 figures."
        case .revenuePerInstallD35: "Revenue by day 35 per install: every window of those cohorts over their installs."
        case .roasD35: "Return on ad spend by day 35: every window of those cohorts over their spend."
        case .ratesUsed: PerformanceMetric.ratesUsed.definition
        case .note: PerformanceMetric.note.definition
        }
    }

    /// The decimals a table shows (amounts in cents, returns to a hundredth); nil for counts and text.
    public var tableDecimals: Int? {
        switch self {
        case .spend, .revenuePerInstallD2, .revenuePerInstallD7, .revenuePerInstallD35, .roasD2, .roasD7, .roasD35: 2
        default: nil
        }
    }
}
