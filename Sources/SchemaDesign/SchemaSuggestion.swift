import JWS

/// Writes a schema whose revenue ranges are the optimal ones for a revenue history (``RevenuePartition``): a new
/// schema with a fine-value table and coarse values, or a new version of an existing bit-field schema with its revenue
/// field's values replaced.
public enum SchemaSuggestion {
    /// What the suggested schema is for and how it is cut.
    public struct Options: Sendable, Equatable {
        /// The advertised app's App Store id.
        public var app: String
        /// The schema's name, for people.
        public var name: String?
        /// When the new version takes effect (ISO 8601).
        public var effectiveFrom: String
        /// The event that carries the revenue, such as `purchase`.
        public var event: String
        /// The most fine values given to paying users (1-63), in a new schema.
        public var fineRanges: Int
        /// The fewest users a value may stand for.
        public var minimumUsers: Int

        /// Options.
        public init(app: String, name: String? = nil, effectiveFrom: String, event: String = "purchase", fineRanges: Int = 63, minimumUsers: Int = 10) {
            self.app = app
            self.name = name
            self.effectiveFrom = effectiveFrom
            self.event = event
            self.fineRanges = fineRanges
            self.minimumUsers = minimumUsers
        }
    }

    /// Why an existing schema cannot take suggested ranges.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// The paying users' revenue in `micros` as whole cents, rounded down (so a range's bounds place each user as
    /// the encoder does), at least one, ascending.
    public static func cents(_ micros: [Int64]) -> [Int64] {
        micros.filter { $0 > 0 }.map { Swift.max(1, $0 / 10_000) }.sorted()
    }

    /// A new schema: window 0's fine values (0 for no revenue, then up to `fineRanges` revenue ranges) and each
    /// window's coarse values (`low` for no revenue, `medium` and `high` two revenue ranges).
    public static func document(for history: RevenueHistory, options: Options) -> JSONValue {
        let fine = RevenuePartition.optimal(cents(history.revenue[0]), ranges: options.fineRanges, minimumUsers: options.minimumUsers)
        var values: [JSONValue] = [.object(JSONObject([member("value", .number("0")), member("events", .array([]))]))]
        for (index, range) in fine.enumerated() {
            values.append(.object(JSONObject([member("value", .number(String(index + 1))), member("events", revenueEvents(range, options))])))
        }
        var windows: [JSONMember] = []
        for window in history.revenue.indices {
            var definition: [JSONMember] = []
            if window == 0 { definition.append(member("fine", .object(JSONObject([member("values", .array(values))])))) }
            definition.append(member("coarse", coarse(history.revenue[window], options)))
            windows.append(member(String(window), .object(JSONObject(definition))))
        }
        var top: [JSONMember] = [member("format", .string("countersign.conversion-schema/1")), member("app", .string(options.app))]
        if let name = options.name { top.append(member("name", .string(name))) }
        top += [
            member("currency", .string(history.currency)),
            member("versions", .array([.object(JSONObject([
                member("version", .number("1")), member("effective-from", .string(options.effectiveFrom)),
                member("install", .object(JSONObject([member("windows", .object(JSONObject(windows)))]))),
            ]))])),
        ]
        return .object(JSONObject(top))
    }

    /// `base` with a new version after its last: a copy of the last whose window-0 bit field named `field` gets value
    /// 0 for no revenue and its other values (2^width − 1) as optimal revenue ranges; the rest of the schema is kept.
    public static func document(replacing field: String, in base: JSONValue, for history: RevenueHistory, options: Options) -> Result<JSONValue, Problem> {
        guard var schema = base.object, case .array(var versions)? = schema["versions"], var last = versions.last?.object else {
            return .failure(Problem(message: "the base schema has no versions; check it with countersign schema check"))
        }
        if let currency = schema["currency"]?.string, currency != history.currency {
            return .failure(Problem(message: "the base schema's revenue is in \(currency); give --currency \(currency)"))
        }
        schema.set("currency", .string(history.currency))
        guard var install = last["install"]?.object, var windows = install["windows"]?.object, var zero = windows["0"]?.object,
              var fine = zero["fine"]?.object, case .array(var bits)? = fine["bits"] else {
            return .failure(Problem(message: "the base schema's last version has no bit fields in install window 0; suggest a new schema without --base"))
        }
        guard let index = bits.firstIndex(where: { $0.object?["name"]?.string == field }), var bitField = bits[index].object,
              case .array(let span)? = bitField["bits"], span.count == 2, let low = span[0].int64, let high = span[1].int64, low <= high, high - low < 6 else {
            let names = bits.compactMap { $0.object?["name"]?.string }.joined(separator: ", ")
            return .failure(Problem(message: "the base schema has no bit field named \(field) in install window 0 (it has \(names)); give --field"))
        }
        let ranges = RevenuePartition.optimal(cents(history.revenue[0]), ranges: (1 << Int(high - low + 1)) - 1, minimumUsers: options.minimumUsers)
        var values: [JSONValue] = [.object(JSONObject([member("value", .number("0")), member("events", .array([]))]))]
        for (position, range) in ranges.enumerated() {
            values.append(.object(JSONObject([member("value", .number(String(position + 1))), member("events", revenueEvents(range, options))])))
        }
        bitField.set("values", .array(values))
        bits[index] = .object(bitField)
        fine.set("bits", .array(bits))
        zero.set("fine", .object(fine))
        windows.set("0", .object(zero))
        install.set("windows", .object(windows))
        last.set("install", .object(install))
        last.set("version", .number(String((last["version"]?.int64 ?? Int64(versions.count)) + 1)))
        last.set("effective-from", .string(options.effectiveFrom))
        versions.append(.object(last))
        schema.set("versions", .array(versions))
        return .success(.object(schema))
    }

    private static func coarse(_ micros: [Int64], _ options: Options) -> JSONValue {
        let ranges = RevenuePartition.optimal(cents(micros), ranges: 2, minimumUsers: options.minimumUsers)
        var levels: [JSONMember] = [member("low", .object(JSONObject([member("events", .array([]))])))]
        for (level, range) in zip(["medium", "high"], ranges) {
            levels.append(member(level, .object(JSONObject([member("events", revenueEvents(range, options))]))))
        }
        return .object(JSONObject(levels))
    }

    private static func revenueEvents(_ range: RevenuePartition.Range, _ options: Options) -> JSONValue {
        .array([.object(JSONObject([
            member("name", .string(options.event)),
            member("revenue", .object(JSONObject([member("min", .number(money(range.lower))), member("max", .number(money(range.upper)))]))),
        ]))])
    }

    /// Cents as a decimal literal with two places.
    static func money(_ cents: Int64) -> String {
        let fraction = cents % 100
        return "\(cents / 100)." + (fraction < 10 ? "0" : "") + String(fraction)
    }

    private static func member(_ key: String, _ value: JSONValue) -> JSONMember { JSONMember(key: key, value: value) }
}
