/// The two postback families Countersign receives.
public enum PostbackProtocol: String, Sendable, Codable, CaseIterable {
    /// AdAttributionKit: JSON with an Apple-signed compact JWS.
    case aak
    /// SKAdNetwork: flat JSON signed over U+2063-joined fields.
    case skan
}

/// `conversion-type`, keeping the raw text so a value Apple adds later is not lost.
public struct ConversionType: RawRepresentable, Sendable, Hashable, Codable {
    /// The known meanings.
    public enum Kind: String, Sendable, CaseIterable {
        case download
        case redownload
        case reEngagement = "re-engagement"
    }

    /// The value as received (`reengagement` stays `reengagement`).
    public let rawValue: String

    /// Wraps a received value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Wraps a known kind in its canonical spelling.
    public init(_ kind: Kind) { self.rawValue = kind.rawValue }

    /// The meaning, or nil for a value this version does not know. Both of Apple's
    /// spellings, `re-engagement` and `reengagement`, mean a re-engagement.
    public var kind: Kind? {
        switch rawValue {
        case "download": .download
        case "redownload": .redownload
        case "re-engagement", "reengagement": .reEngagement
        default: nil
        }
    }

    /// Installs (download, redownload) or re-engagements; what a schema is chosen by.
    public var conversionClass: ConversionClass? {
        switch kind {
        case .download, .redownload: .install
        case .reEngagement: .reEngagement
        case nil: nil
        }
    }
}

/// Installs versus re-engagements: schemas define them separately.
public enum ConversionClass: String, Sendable, Codable, CaseIterable {
    case install
    case reEngagement = "re-engagement"
}

/// `coarse-conversion-value`, keeping the raw text.
public struct CoarseValue: RawRepresentable, Sendable, Hashable, Codable {
    /// The known levels.
    public enum Level: String, Sendable, CaseIterable {
        case low, medium, high
    }

    /// The value as received.
    public let rawValue: String
    /// Wraps a received value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Wraps a known level.
    public init(_ level: Level) { self.rawValue = level.rawValue }
    /// The level, or nil when unknown.
    public var level: Level? { Level(rawValue: rawValue) }
}

/// `ad-interaction-type`, keeping the raw text.
public struct InteractionType: RawRepresentable, Sendable, Hashable, Codable {
    /// The known kinds.
    public enum Kind: String, Sendable, CaseIterable {
        case click, view
    }

    /// The value as received.
    public let rawValue: String
    /// Wraps a received value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Wraps a known kind.
    public init(_ kind: Kind) { self.rawValue = kind.rawValue }
    /// The kind, or nil when unknown.
    public var kind: Kind? { Kind(rawValue: rawValue) }
}
