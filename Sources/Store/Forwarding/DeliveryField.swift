/// A fact about a stored postback that a delivery template can put under a partner's key: Apple's decoded fields, the
/// names in force, the schema's revenue, the imported cost, and when and from where it arrived. A closed list: a
/// template names these, never SQL or code.
public enum DeliveryField: String, Sendable, CaseIterable {
    case dedupKey = "dedup_key", postbackIdentifier = "postback_identifier"
    case receivedAt = "received_at", receivedAtUnix = "received_at_unix", receivedAtUnixMilliseconds = "received_at_unix_ms"
    case estimatedInstallAt = "estimated_install_at", installDay = "install_day"
    case `protocol`, version, environment, outcome, countable
    case adNetworkID = "ad_network_id", adNetworkName = "ad_network_name", app, appName = "app_name"
    case sourceIdentifier = "source_identifier", campaign, campaignName = "campaign_name", adGroup = "ad_group", adGroupName = "ad_group_name"
    case creative, creativeName = "creative_name"
    case campaignID = "campaign_id", adGroupID = "ad_group_id", creativeID = "creative_id"
    case conversionType = "conversion_type", conversionClass = "conversion_class", conversionWindow = "conversion_window"
    case didWin = "did_win", redownload, interaction, viewThrough = "view_through", fidelityType = "fidelity_type"
    case publisherItemID = "publisher_item_id", sourceDomain = "source_domain"
    case conversionValue = "conversion_value", coarseValue = "coarse_value", countryCode = "country_code"
    case revenueMin = "revenue_min", revenueMax = "revenue_max", revenueMid = "revenue_mid", currency
    case costPerInstall = "cost_per_install", costCurrency = "cost_currency"
    case remoteAddress = "remote_address"

    /// Where ``DeliveryFacts`` keeps the field's value: its place in `allCases`. Looked up once where a body is made
    /// per postback (a template's entries, the facts reader's columns), so rendering hashes no field names.
    var place: Int { Self.places[self]! }

    private static let places = Dictionary(uniqueKeysWithValues: allCases.enumerated().map { ($1, $0) })

    /// The JSON type the field is sent as.
    public enum Kind: String, Sendable {
        case text, integer, decimal, boolean
    }

    /// The JSON type the field is sent as: ids made of digits stay text, so a leading zero survives.
    public var kind: Kind {
        switch self {
        case .receivedAtUnix, .receivedAtUnixMilliseconds, .app, .conversionWindow, .fidelityType, .publisherItemID, .conversionValue: .integer
        case .revenueMin, .revenueMax, .revenueMid, .costPerInstall: .decimal
        case .didWin, .redownload, .viewThrough, .countable: .boolean
        default: .text
        }
    }

    /// What the field holds, in the words docs/operations.md and `countersign forward templates --fields` use.
    public var definition: String {
        switch self {
        case .dedupKey: "The postback's dedup key (also sent as Idempotency-Key)."
        case .postbackIdentifier: "Apple's transaction or postback identifier, as signed."
        case .receivedAt: "When the first copy arrived (ISO 8601 UTC, milliseconds)."
        case .receivedAtUnix: "The same moment in Unix seconds."
        case .receivedAtUnixMilliseconds: "The same moment in Unix milliseconds."
        case .estimatedInstallAt: "The estimated install (or re-engagement) time (docs/metrics.md), ISO 8601 UTC."
        case .installDay: "The estimated install day in the app's registered time zone (else UTC), YYYY-MM-DD."
        case .protocol: "aak or skan."
        case .version: "The SKAdNetwork version; absent for AdAttributionKit."
        case .environment: "production or development."
        case .outcome: "What verification found: verified, or forged, unverifiable and the like (forwarding sends verified postbacks only)."
        case .countable: "Whether reports count the postback (docs/metrics.md)."
        case .adNetworkID: "The ad network id Apple signed."
        case .adNetworkName: "The ad network's registered name, else its id."
        case .app: "The advertised app's App Store id."
        case .appName: "The app's registered name, else its id."
        case .sourceIdentifier: "The whole source identifier (or SKAdNetwork's campaign-id before 4.0)."
        case .campaign: "Digits 1-2 of the source identifier."
        case .campaignName: "The campaign's name in force (countersign names, else the schema's), else its digits."
        case .adGroup: "Digit 3 of the source identifier, when Apple sent it."
        case .adGroupName: "The ad group's name, found as campaign_name is."
        case .creative: "Digit 4 of the source identifier, when Apple sent it."
        case .creativeName: "The creative's name, found as campaign_name is."
        case .campaignID: "The network's campaign id: the dated mapping's Campaign ID in force on the install day (docs/operations.md#dated-names), else the campaign digits."
        case .adGroupID: "The network's ad group id from the mapping in force, else the ad group digit."
        case .creativeID: "The network's creative id from the mapping in force, else the creative digit."
        case .conversionType: "download, redownload or re-engagement, as signed."
        case .conversionClass: "install or re-engagement."
        case .conversionWindow: "0, 1 or 2."
        case .didWin: "Whether the postback is the winning network's."
        case .redownload: "SKAdNetwork's signed redownload flag."
        case .interaction: "click or view."
        case .viewThrough: "true for a view-through (interaction view), false for a click."
        case .fidelityType: "SKAdNetwork's signed fidelity-type (1 click, 0 view)."
        case .publisherItemID: "The app that showed the ad (its App Store id), when signed."
        case .sourceDomain: "The web domain that showed the ad, when signed."
        case .conversionValue: "The fine conversion value 0-63 (not signed by Apple)."
        case .coarseValue: "The coarse value low, medium or high (not signed by Apple)."
        case .countryCode: "Apple's country-code (not signed; sent only at crowd-anonymity tier 3)."
        case .revenueMin: "The lowest revenue the app's schema gives the conversion value."
        case .revenueMax: "The highest."
        case .revenueMid: "Their middle."
        case .currency: "The schema's ISO 4217 currency."
        case .costPerInstall: "The campaign's imported spend on the install day divided by its claimed installs that day (the campaign as performance names it: the dated mapping's id, else the digits), for a winning first-window install; absent without both."
        case .costCurrency: "The spend's ISO 4217 currency."
        case .remoteAddress: "The address the postback came from (the device's, or the proxy's when behind one)."
        }
    }
}
