import Foundation

/// The decoder's inverse: from what a user did, the fine value, coarse value and lock decision for the current
/// window, under the schema version in force and the rules of the Apple call the app uses.
///
/// A value is chosen by what it tells:
/// 1. it may only claim events that happened: each event without revenue, as many times as it says (once when it
///    gives no count); an event with a revenue range is told by the user's revenue, whatever its name;
/// 2. among those, the value that tells the most: its events' counts added, plus one when it tells revenue the user
///    has; with no revenue, a value with a revenue range is taken only when no other fits;
/// 3. on a tie, with revenue, the value whose range holds it (`min` <= revenue < `max`; the top range includes its
///    `max`, and a range whose `min` and `max` are equal holds exactly that amount; the narrower when two hold it),
///    else the nearest range (the lower one on a tie); without revenue, or among values without ranges, the lowest
///    value.
///
/// A window is locked only when nothing the user does later can change its value: the value tells as much as any
/// value of the window could, and holds the top revenue range (or the window has no ranges), since revenue only grows.
/// Apple may then send the postback early; in every other case it waits for the window's end.
public enum ConversionEncoder {
    /// The update for `progress` at `time`, or nil when there is nothing to set: no version in force, a class or
    /// window the schema does not define, past the last window, or (before SKAdNetwork 4.0) no increase over
    /// `previous`.
    public static func update(
        _ schema: EncodingSchema, conversionClass: EncodingSchema.ConversionClass = .install, progress: UserProgress, at time: Date = Date(),
        api: PostbackAPI, previous: ConversionUpdate? = nil
    ) -> ConversionUpdate? {
        guard let version = schema.version(at: time), let windows = version.windows(conversionClass) else { return nil }
        switch api {
        case .skadnetwork3:
            // One value for the whole 24-hour-timer period, read from window 0's fine values; only increases count.
            guard conversionClass == .install, let first = windows.first, let fine = choose(first.fine, progress)?.value else { return nil }
            if let earlier = previous?.fine, earlier >= fine { return nil }
            return ConversionUpdate(window: 0, fine: fine, coarse: nil, lock: false)
        case .skadnetwork4, .adAttributionKit:
            guard let index = progress.window, index < windows.count else { return nil }
            let window = windows[index]
            let fine = choose(window.fine, progress)
            let coarse = choose(window.coarse, progress)
            guard fine != nil || coarse != nil else { return nil }
            let final = index == 0 ? fine.map { isFinal($0, among: window.fine) } : coarse.map { isFinal($0, among: window.coarse) }
            return ConversionUpdate(window: index, fine: fine?.value, coarse: coarse?.value, lock: final ?? false)
        }
    }

    /// The rule `progress` takes among `rules`, by the order above; nil when none may be claimed.
    public static func choose<Value: Comparable>(_ rules: [EncodingSchema.Rule<Value>], _ progress: UserProgress) -> EncodingSchema.Rule<Value>? {
        let paid = progress.revenue > 0
        // Values that fit, best first; without revenue, values with a range are kept apart as the fallback.
        var best: [EncodingSchema.Rule<Value>] = []
        var bestTold = -1
        var unpaidFallback: [EncodingSchema.Rule<Value>] = []
        var fallbackTold = -1
        for rule in rules {
            var told = 0
            var fits = true
            for event in rule.events where event.revenue != true {
                let needed = event.count ?? 1
                if progress.events[event.name, default: 0] < needed {
                    fits = false
                    break
                }
                told += needed
            }
            guard fits else { continue }
            if rule.revenue != nil {
                guard paid else {
                    if told > fallbackTold {
                        unpaidFallback = [rule]
                        fallbackTold = told
                    } else if told == fallbackTold {
                        unpaidFallback.append(rule)
                    }
                    continue
                }
                told += 1
            }
            if told > bestTold {
                best = [rule]
                bestTold = told
            } else if told == bestTold {
                best.append(rule)
            }
        }
        if best.isEmpty { best = unpaidFallback }
        let ranged = best.filter { $0.revenue != nil }
        guard paid || best.allSatisfy({ $0.revenue != nil }), !ranged.isEmpty else { return best.min { $0.value < $1.value } }
        return nearest(ranged, to: progress.revenue)
    }

    /// Whether `rule` is a value nothing later can change: it tells what the most telling value of `rules` tells, and
    /// has the top range (or no value of `rules` has a range).
    public static func isFinal<Value>(_ rule: EncodingSchema.Rule<Value>, among rules: [EncodingSchema.Rule<Value>]) -> Bool {
        func told(_ rule: EncodingSchema.Rule<Value>) -> Int {
            rule.events.filter { $0.revenue != true }.reduce(0) { $0 + ($1.count ?? 1) } + (rule.revenue == nil ? 0 : 1)
        }
        let most = rules.map(told).max() ?? 0
        let top = rules.compactMap { $0.revenue?.max }.max()
        return told(rule) == most && (top == nil || (rule.revenue != nil && rule.revenue?.max == top))
    }

    /// Among `rules` (each with a range), the lowest value whose range holds `revenue`, else the nearest range's.
    static func nearest<Value: Comparable>(_ rules: [EncodingSchema.Rule<Value>], to revenue: Double) -> EncodingSchema.Rule<Value>? {
        let top = rules.compactMap { $0.revenue?.max }.max() ?? 0
        func distance(_ range: EncodingSchema.Revenue) -> Double {
            if revenue < range.min { return range.min - revenue }
            if revenue < range.max || (revenue == range.max && (range.max == top || range.min == range.max)) { return -1 }
            return revenue - range.max
        }
        return rules.min { left, right in
            guard let a = left.revenue, let b = right.revenue else { return false }
            let (da, db) = (distance(a), distance(b))
            if da != db { return da < db }
            // Of two ranges that hold the revenue, the narrower says more.
            if da < 0, a.max - a.min != b.max - b.min { return a.max - a.min < b.max - b.min }
            if a.min != b.min { return a.min < b.min }
            return left.value < right.value
        }
    }
}
