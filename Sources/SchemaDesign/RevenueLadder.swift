import ConversionSchema
import Foundation
import Postback

/// The values of one window (fine values, or coarse values) ordered by the revenue they decode to, and the rule that
/// picks the value for a user's revenue, the rule an app's encoder follows:
/// - revenue 0 takes the lowest defined value without revenue, if there is one;
/// - otherwise the value whose range holds the revenue (`min <= revenue < max`; the top range includes its `max`),
///   the lowest such value when several share the range (bit fields);
/// - revenue in no range takes the nearest range (below the lowest, above the highest, or in a gap between two),
///   the lower one on a tie.
public struct RevenueLadder: Sendable, Equatable {
    /// One value and what it decodes to.
    public struct Rung: Sendable, Equatable {
        /// `0`-`63`, or `low`, `medium`, `high`.
        public var value: String
        /// The decoded range; nil for a value without revenue.
        public var revenue: RevenueRange?

        /// The point estimate reports use: the range's middle, 0 without revenue.
        public var decoded: Double { revenue?.midpoint ?? 0 }
    }

    /// The value revenue 0 takes, if one is defined without revenue.
    public let zero: Rung?
    /// One rung per distinct range, ascending.
    public let ranges: [Rung]

    /// A ladder of `rungs` in value order (undefined values left out).
    public init(_ rungs: [Rung]) {
        zero = rungs.first { $0.revenue == nil }
        var byRange: [Rung] = []
        for rung in rungs {
            guard let range = rung.revenue, !byRange.contains(where: { $0.revenue == range }) else { continue }
            byRange.append(rung)
        }
        ranges = byRange.sorted { ($0.revenue?.min ?? 0, $0.revenue?.max ?? 0) < ($1.revenue?.min ?? 0, $1.revenue?.max ?? 0) }
    }

    /// The ladder of `window`'s fine values (`coarse` false) or coarse values, for installs, under the version of
    /// `schema` in force at `time`, decoded by the decoder ingest uses; nil when the window defines none.
    public init?(_ schema: ConversionSchema, window: Int, coarse: Bool, at time: Date) {
        let values: [(String, Int?, CoarseValue.Level?)] = coarse
            ? CoarseValue.Level.allCases.map { ($0.rawValue, nil, $0) }
            : (0...63).map { (String($0), $0, nil) }
        var rungs: [Rung] = []
        for (name, fine, level) in values {
            guard case .success(let decoded) = SchemaDecoder.decode(schema, conversionClass: .install, window: window, fine: fine, coarse: level,
                                                                      sourceIdentifier: nil, at: time), decoded.defined else { continue }
            rungs.append(Rung(value: name, revenue: decoded.revenue))
        }
        guard !rungs.isEmpty else { return nil }
        self.init(rungs)
    }

    /// The rung a user with `revenue` (in the schema's currency) takes.
    public func pick(_ revenue: Double) -> Rung {
        if revenue == 0, let zero { return zero }
        guard let lowest = ranges.first else { return zero ?? Rung(value: "", revenue: nil) }
        // The last range starting at or below the revenue, found by halving.
        var (low, high) = (0, ranges.count)
        while low < high {
            let middle = (low + high) / 2
            if (ranges[middle].revenue?.min ?? 0) <= revenue { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return lowest }
        let below = ranges[low - 1]
        let top = below.revenue?.max ?? 0
        if revenue < top || low == ranges.count { return below }
        let above = ranges[low]
        return revenue - top <= (above.revenue?.min ?? 0) - revenue ? below : above
    }
}
