import Foundation

/// What each conversion value of one app means, in the form an app encodes with: every defined fine and coarse
/// value, per conversion class and window, with the events it stands for and its revenue range, as Countersign's
/// decoder reads the schema. Served by `GET /v1/schemas/{app}/published` and written by `countersign schema codegen`.
public struct EncodingSchema: Codable, Sendable, Equatable {
    /// `countersign.encoding-schema/1`.
    public var format: String
    /// The advertised app's App Store id.
    public var app: String
    /// The server's revision of the schema this was made from, if it came from the server.
    public var revision: Int?
    /// The currency of every revenue range.
    public var currency: String?
    /// The schema's versions, oldest first.
    public var versions: [Version]

    /// A schema.
    public init(app: String, revision: Int? = nil, currency: String?, versions: [Version]) {
        format = "countersign.encoding-schema/1"
        self.app = app
        self.revision = revision
        self.currency = currency
        self.versions = versions
    }

    /// The version in force at `time`: the last whose start is at or before it.
    public func version(at time: Date) -> Version? {
        versions.last { $0.effectiveFrom <= time }
    }

    /// One version: its number, when it takes effect, and its rules per conversion class.
    public struct Version: Codable, Sendable, Equatable {
        public var version: Int
        /// When the server starts decoding with it.
        public var effectiveFrom: Date
        /// Windows 0, 1 and 2 of installs; nil when the version does not define installs.
        public var install: [Window]?
        /// Windows 0, 1 and 2 of re-engagements.
        public var reengagement: [Window]?

        enum CodingKeys: String, CodingKey {
            case version, effectiveFrom = "effective-from", install, reengagement = "re-engagement"
        }

        /// A version.
        public init(version: Int, effectiveFrom: Date, install: [Window]?, reengagement: [Window]?) {
            self.version = version
            self.effectiveFrom = effectiveFrom
            self.install = install
            self.reengagement = reengagement
        }

        /// The windows of `conversionClass`.
        public func windows(_ conversionClass: ConversionClass) -> [Window]? {
            conversionClass == .install ? install : reengagement
        }
    }

    /// One window's defined values, each with its meaning.
    public struct Window: Codable, Sendable, Equatable {
        /// Fine values 0-63 (Apple reports them in window 0 only).
        public var fine: [Rule<Int>]
        /// Coarse values.
        public var coarse: [Rule<CoarseValue>]

        /// A window.
        public init(fine: [Rule<Int>], coarse: [Rule<CoarseValue>]) {
            self.fine = fine
            self.coarse = coarse
        }
    }

    /// One value and what it means.
    public struct Rule<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
        public var value: Value
        /// The events it stands for.
        public var events: [Event]
        /// Its revenue range, the events' ranges added; nil without revenue.
        public var revenue: Revenue?

        /// A rule.
        public init(value: Value, events: [Event], revenue: Revenue?) {
            self.value = value
            self.events = events
            self.revenue = revenue
        }
    }

    /// An event a value stands for: its name, and how many times (at least once when not given).
    public struct Event: Codable, Sendable, Equatable {
        public var name: String
        public var count: Int?
        /// Whether it carries revenue: such events are told by the user's revenue, not by name.
        public var revenue: Bool?

        /// An event.
        public init(name: String, count: Int? = nil, revenue: Bool? = nil) {
            self.name = name
            self.count = count
            self.revenue = revenue
        }
    }

    /// A revenue range in the schema's currency.
    public struct Revenue: Codable, Sendable, Equatable {
        public var min: Double
        public var max: Double

        /// A range.
        public init(min: Double, max: Double) {
            self.min = min
            self.max = max
        }

        /// The middle, which reports count.
        public var midpoint: Double { (min + max) / 2 }
    }
}

extension EncodingSchema {
    /// Installs (downloads and redownloads) or re-engagements.
    public enum ConversionClass: String, Codable, Sendable, CaseIterable {
        case install
        case reengagement = "re-engagement"
    }

    /// Apple's coarse conversion values, in increasing order.
    public enum CoarseValue: String, Codable, Sendable, CaseIterable, Comparable {
        case low, medium, high

        public static func < (left: CoarseValue, right: CoarseValue) -> Bool { left.rank < right.rank }

        private var rank: Int {
            switch self {
            case .low: 0
            case .medium: 1
            case .high: 2
            }
        }
    }
}
