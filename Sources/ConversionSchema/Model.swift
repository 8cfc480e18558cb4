import Foundation
import Postback
import Spend

/// One app's conversion-value schema: what each fine and coarse value means, per conversion class and window, over time.
public struct ConversionSchema: Sendable, Equatable {
    /// The advertised app: `advertised-item-identifier` / `app-id`.
    public var app: AppID
    /// A name for people.
    public var name: String?
    /// The currency every revenue range is in.
    public var currency: String?
    /// What each digit position of the source identifier means.
    public var sourceHierarchy: [SourceLevel]
    /// Versions in increasing order of `effectiveFrom`.
    public var versions: [SchemaVersion]
    /// Dated mappings of source identifiers per ad network id (`source-mappings`): stored on upload as the whole list
    /// of each network named, as `countersign names import-mappings` stores a file.
    public var sourceMappings: [String: [SourceMapping]] = [:]

    /// The version in force at `time`: the last whose `effectiveFrom` is at or before it.
    public func version(at time: Date) -> SchemaVersion? {
        versions.last { $0.effectiveFrom <= time }
    }
}

/// One level of the source-identifier hierarchy, such as digits 1-2 = campaign.
public struct SourceLevel: Sendable, Equatable {
    /// The level's name (`campaign`, `ad-group`, `creative`, ...).
    public var level: String
    /// First digit position, 1-based.
    public var firstDigit: Int
    /// Last digit position, 1-based, inclusive.
    public var lastDigit: Int
    /// Names of known values, keyed by the digits.
    public var names: [String: String]
    /// Names of known values for one ad network (keyed by its id, then the digits), which win over `names`: each
    /// network chooses its own digits.
    public var networkNames: [String: [String: String]] = [:]

    /// The name of `digits` on `adNetwork`'s ads: the network's own, else the app's.
    public func name(of digits: String, adNetwork: String?) -> String? {
        adNetwork.flatMap { networkNames[$0]?[digits] } ?? names[digits]
    }
}

/// One version of a schema.
public struct SchemaVersion: Sendable, Equatable {
    /// The version number; versions increase.
    public var version: Int
    /// From when postbacks are decoded with this version (by received time).
    public var effectiveFrom: Date
    /// Definitions for installs and re-engagements.
    public var classes: [ConversionClass: ClassDefinition]
}

/// The windows of one conversion class.
public struct ClassDefinition: Sendable, Equatable {
    /// Window (0, 1, 2) to its definition; a missing window inherits from the one before.
    public var windows: [Int: WindowDefinition]

    /// The fine mapping for `window`, inherited from earlier windows when this one defines none.
    public func fine(window: Int) -> FineMapping? {
        for candidate in stride(from: window, through: 0, by: -1) {
            if let fine = windows[candidate]?.fine { return fine }
        }
        return nil
    }

    /// The coarse mapping for `window`, inherited from earlier windows when this one defines none.
    public func coarse(window: Int) -> [CoarseValue.Level: Outcome]? {
        for candidate in stride(from: window, through: 0, by: -1) {
            if let coarse = windows[candidate]?.coarse { return coarse }
        }
        return nil
    }
}

/// What one window defines.
public struct WindowDefinition: Sendable, Equatable {
    /// Fine values 0-63.
    public var fine: FineMapping?
    /// Coarse values.
    public var coarse: [CoarseValue.Level: Outcome]?
}

/// How fine values are written: a table of values and ranges, or bit fields.
public enum FineMapping: Sendable, Equatable {
    /// Value to outcome (ranges expanded).
    case table([Int: Outcome])
    /// Bit fields decoded independently and merged.
    case bitFields([BitField])
}

/// A group of bits in the 6-bit fine value, such as bits 0-3 for a revenue bucket.
public struct BitField: Sendable, Equatable {
    /// The field's name.
    public var name: String
    /// Lowest bit, 0-based.
    public var lowBit: Int
    /// Highest bit, inclusive.
    public var highBit: Int
    /// Field value to outcome.
    public var values: [Int: Outcome]

    /// This field's value within a fine value.
    public func extract(_ fine: Int) -> Int {
        (fine >> lowBit) & ((1 << (highBit - lowBit + 1)) - 1)
    }
}

/// What a value means: business events and properties.
public struct Outcome: Sendable, Equatable {
    /// The events.
    public var events: [BusinessEvent]
    /// Properties of the whole conversion (for example `days: "3-7"`).
    public var properties: [String: String]
}

/// A named business event with optional count, revenue range and properties.
public struct BusinessEvent: Sendable, Equatable {
    public var name: String
    public var count: Int?
    public var revenue: RevenueRange?
    public var properties: [String: String]
}

/// A revenue range in one currency.
public struct RevenueRange: Sendable, Equatable {
    public var min: Double
    public var max: Double
    public var currency: String

    /// A range from `min` to `max` in `currency`.
    public init(min: Double, max: Double, currency: String) {
        self.min = min
        self.max = max
        self.currency = currency
    }

    /// The middle of the range, the usual point estimate.
    public var midpoint: Double { (min + max) / 2 }
}
