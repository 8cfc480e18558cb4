import Foundation
import JWS
import Postback

/// What one check of a rule measured, by kind: the raw counts a reading is judged from.
public enum AlertFigures: Sendable, Equatable {
    /// When the last verified postback arrived (nil: not in the 35 days looked back).
    case silence(lastArrival: Date?)
    /// `part` of `whole` (untrusted arrivals of all arrivals; installs without a value of all installs).
    case share(part: Int, whole: Int)
    /// Installs claimed and verified over the judged days (`from` to `to`, `to` excluded).
    case claimGap(claimed: Int, verified: Int, from: String, to: String)
    /// Dead letters waiting.
    case deadLetters(Int)
    /// Installs per value label in the last window and in the window before it.
    case valueMix(recent: [String: Int], before: [String: Int])

    /// Whether `rule` fires on these figures at `now`, with a sentence that says why and the figures as JSON. The one
    /// statement of every kind's condition (docs/alerts.md gives it in words).
    public func reading(for rule: AlertRule, now: Date) -> AlertReading {
        let threshold = rule.threshold ?? 0
        let scope = Self.scope(rule)
        switch self {
        case .silence(let last):
            let hours = last.map { now.timeIntervalSince($0) / 3600 }
            let firing = (hours ?? .infinity) >= (rule.hours ?? 0)
            let sentence = if let last, let hours {
                firing ? "No verified postback\(scope) for \(Self.hours(hours)) (the last arrived at \(Timestamp.format(last)))."
                    : "Verified postbacks\(scope) arrive: the last \(Self.hours(hours)) ago."
            } else { "No verified postback\(scope) in the last 35 days." }
            return AlertReading(firing: firing, summary: sentence, figures: JSONObject([
                JSONMember(key: "last_arrival", value: last.map { .string(Timestamp.format($0)) } ?? .null),
                JSONMember(key: "hours_since", value: hours.map { .number(Self.decimal($0, places: 2)) } ?? .null),
                JSONMember(key: "hours", value: .number(Self.decimal(rule.hours ?? 0, places: 2))),
            ]))
        case .share(let part, let whole):
            let share = whole > 0 ? Double(part) / Double(whole) : 0
            let firing = whole >= rule.minimum && share >= threshold
            let what = rule.kind == .untrustedShare
                ? ("arrivals", "invalid or unverifiable") : ("winning first-window installs\(scope)", "without a conversion value")
            var sentence = "\(Self.percent(share)) of \(whole) \(what.0) in the last \(Self.hours(rule.hours ?? 0)) were \(what.1) (fires at \(Self.percent(threshold)))."
            if whole < rule.minimum { sentence += " Too few to judge: fewer than \(rule.minimum)." }
            return AlertReading(firing: firing, summary: sentence, figures: JSONObject([
                JSONMember(key: "part", value: .number(String(part))), JSONMember(key: "whole", value: .number(String(whole))),
                JSONMember(key: "share", value: .number(Self.decimal(share, places: 4))),
                JSONMember(key: "threshold", value: .number(Self.decimal(threshold, places: 4))),
            ]))
        case .claimGap(let claimed, let verified, let from, let to):
            let gap = claimed > 0 ? Double(claimed - verified) / Double(claimed) : 0
            let firing = claimed >= rule.minimum && gap >= threshold
            var sentence = "\(claimed) installs claimed and \(verified) verified\(scope) from \(from) to \(to) (excluded): a gap of \(Self.percent(gap)) (fires at \(Self.percent(threshold)))."
            if claimed < rule.minimum { sentence += " Too few claimed to judge: fewer than \(rule.minimum)." }
            return AlertReading(firing: firing, summary: sentence, figures: JSONObject([
                JSONMember(key: "claimed_installs", value: .number(String(claimed))), JSONMember(key: "installs", value: .number(String(verified))),
                JSONMember(key: "gap", value: .number(Self.decimal(gap, places: 4))), JSONMember(key: "from", value: .string(from)),
                JSONMember(key: "to", value: .string(to)), JSONMember(key: "threshold", value: .number(Self.decimal(threshold, places: 4))),
            ]))
        case .deadLetters(let count):
            let firing = Double(count) >= threshold
            let whose = rule.partner.map { " of the forwarding rule \($0)" } ?? ""
            return AlertReading(firing: firing, summary: "\(count) forwarding dead letters\(whose) wait for countersign forward retry.",
                                figures: JSONObject([JSONMember(key: "dead_letters", value: .number(String(count)))]))
        case .valueMix(let recent, let before):
            let (recentCount, beforeCount) = (recent.values.reduce(0, +), before.values.reduce(0, +))
            let distance = Self.totalVariation(recent, before)
            let firing = recentCount >= rule.minimum && beforeCount >= rule.minimum && distance >= threshold
            var sentence = "The conversion values of \(recentCount) installs\(scope) in the last \(Self.hours(rule.hours ?? 0)) differ from those of \(beforeCount) before by \(Self.percent(distance)) (fires at \(Self.percent(threshold)))."
            if recentCount < rule.minimum || beforeCount < rule.minimum { sentence += " Too few to judge: fewer than \(rule.minimum) in a period." }
            func mix(_ counts: [String: Int]) -> JSONValue {
                .object(JSONObject(counts.sorted { $0.key < $1.key }.map { JSONMember(key: $0.key, value: .number(String($0.value))) }))
            }
            return AlertReading(firing: firing, summary: sentence, figures: JSONObject([
                JSONMember(key: "distance", value: .number(Self.decimal(distance, places: 4))), JSONMember(key: "recent", value: mix(recent)),
                JSONMember(key: "before", value: mix(before)), JSONMember(key: "threshold", value: .number(Self.decimal(threshold, places: 4))),
            ]))
        }
    }

    /// Half the sum of the differences between each label's share in `first` and in `second`: 0 for the same mix, 1
    /// for mixes with no label in common; 0 when either is empty.
    static func totalVariation(_ first: [String: Int], _ second: [String: Int]) -> Double {
        let (firstTotal, secondTotal) = (Double(first.values.reduce(0, +)), Double(second.values.reduce(0, +)))
        guard firstTotal > 0, secondTotal > 0 else { return 0 }
        let labels = Set(first.keys).union(second.keys)
        return labels.reduce(0.0) { sum, label in
            sum + abs(Double(first[label] ?? 0) / firstTotal - Double(second[label] ?? 0) / secondTotal)
        } / 2
    }

    /// " of app 1108187390 from example123.skadnetwork", as far as the rule filters.
    static func scope(_ rule: AlertRule) -> String {
        var text = ""
        if let app = rule.app { text += " of app \(app)" }
        if let network = rule.adNetwork { text += " from \(network)" }
        return text
    }

    static func percent(_ share: Double) -> String { decimal(share * 100, places: 1) + "%" }

    static func hours(_ hours: Double) -> String { decimal(hours, places: 1) + (hours == 1 ? " hour" : " hours") }

    /// `value` rounded to `places` decimals, without trailing zeros.
    static func decimal(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "0" }
        var text = String(format: "%.\(places)f", value)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }
}

/// Whether a rule fires now, why, and the figures it was judged on.
public struct AlertReading: Sendable, Equatable {
    /// Whether the rule's condition holds.
    public let firing: Bool
    /// One sentence for people.
    public let summary: String
    /// What was measured, by kind.
    public let figures: JSONObject

    /// A reading.
    public init(firing: Bool, summary: String, figures: JSONObject) {
        self.firing = firing
        self.summary = summary
        self.figures = figures
    }

    /// The reading as the API and the CLI show it.
    public var json: JSONObject {
        JSONObject([JSONMember(key: "firing", value: .bool(firing)), JSONMember(key: "summary", value: .string(summary)),
                    JSONMember(key: "figures", value: .object(figures))])
    }
}
