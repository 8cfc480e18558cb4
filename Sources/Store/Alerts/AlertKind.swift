import Foundation

/// What an alert rule watches. Each kind reads a few of a rule's fields; ``AlertRule/check(_:)`` refuses the others.
public enum AlertKind: String, Sendable, CaseIterable {
    /// Verified postbacks stopped arriving.
    case silence
    /// The share of arrivals that were invalid (forged, badly signed, malformed) or unverifiable rose.
    case untrustedShare = "untrusted_share"
    /// The share of installs without a conversion value rose.
    case nullShare = "null_share"
    /// What a network claims outran what Apple signed.
    case claimGap = "claim_gap"
    /// Forwarding gave up on postbacks.
    case deadLetters = "dead_letters"
    /// The mix of conversion values changed, as a schema revision (or a broken app release) changes it.
    case valueMix = "value_mix"
    /// Not a condition: yesterday's installs, spend, eCPI and ROAS by network, once a day.
    case digest

    /// What the kind measures and when it fires, in an analyst's words; docs/alerts.md shows the same text.
    public var definition: String {
        switch self {
        case .silence:
            "Fires when no verified postback of the app (and network, when the rule names one) has arrived for `hours` hours. Read from the daily arrival counts, which look back 35 days: a rule over traffic that never arrived fires too."
        case .untrustedShare:
            "Of every body that arrived in the last `hours` hours (stored, duplicate, replayed or refused alike), the share that was invalid (forged, badly signed or malformed) or unverifiable (an unknown key or version). Fires when it is at least `threshold` over at least `minimum` arrivals. It watches every app: a forged body names no app one can trust."
        case .nullShare:
            "Of the counted, winning, first-window install postbacks of the app (and network) that arrived in the last `hours` hours, the share with neither a fine nor a coarse conversion value (Apple's privacy threshold withheld it). Fires when it is at least `threshold` over at least `minimum` installs."
        case .claimGap:
            "Over the 7 days that end 4 days before today (UTC, estimated install days: the first window's postbacks of older days have arrived), the installs the network's imported report claims for the app (and network) against the verified installs Countersign counts for them, as `countersign performance` counts both. The gap is (claimed - verified) / claimed; fires when it is at least `threshold` and at least `minimum` installs were claimed."
        case .deadLetters:
            "The forwarding dead letters waiting for `countersign forward retry` (of the forwarding rule named by `partner`, else of every rule). Fires when there are at least `threshold`."
        case .valueMix:
            "The mix of conversion values (the fine value, else the coarse one, else none) of the counted, winning, first-window installs of the app (and network) that arrived in the last `hours` hours, against the mix of those that arrived in the 7 × `hours` hours before. The change is the total variation distance: half the sum, over every value, of the difference between its two shares (0 the same mix, 1 nothing in common). Fires when it is at least `threshold` and each period holds at least `minimum` installs."
        case .digest:
            "Once a day, at `hour` o'clock in the rule's `time_zone`: yesterday's installs, claimed installs, spend, eCPI, revenue and ROAS (mid) by ad network, as `countersign performance --basis arrival --by ad_network` reports that day (by arrival: most of yesterday's installs have not reported yet)."
        }
    }

    /// The threshold a rule of this kind uses when it gives none.
    public var defaultThreshold: Double? {
        switch self {
        case .untrustedShare: 0.05
        case .nullShare: 0.5
        case .claimGap: 0.3
        case .deadLetters: 1
        case .valueMix: 0.3
        case .silence, .digest: nil
        }
    }

    /// The window a rule of this kind looks at when it gives none, in hours.
    public var defaultHours: Double? {
        switch self {
        case .silence: 6
        case .untrustedShare, .nullShare, .valueMix: 24
        case .claimGap, .deadLetters, .digest: nil
        }
    }

    /// Whether the threshold is a share (0 to 1) rather than a count.
    var thresholdIsShare: Bool { self != .deadLetters }
    /// Whether the kind reads `minimum`.
    var usesMinimum: Bool { [.untrustedShare, .nullShare, .claimGap, .valueMix].contains(self) }
    /// Whether the kind takes `app` and `ad_network` filters.
    var takesFilters: Bool { [.silence, .nullShare, .claimGap, .valueMix, .digest].contains(self) }
}
