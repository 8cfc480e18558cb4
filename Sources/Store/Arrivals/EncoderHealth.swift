import Foundation
import JWS
import Postback

/// What an app's stored postbacks say about the encoder that set their values (issue 47, item 5): per app and day the
/// counts below, and the symptoms read from them, each with its likely cause and the docs section to read. Pure: the
/// store hands it grouped counts of counted install postbacks.
public struct EncoderHealth: Sendable, Equatable {
    /// One group of counted install postbacks: an app's day, window, tier, values and decoding.
    public struct Group: Sendable, Equatable {
        public var app: AppID
        public var day: String
        public var window: Int
        /// The lowest crowd-anonymity tier the postback's fields allow.
        public var tier: Int
        public var fine: Int?
        public var coarse: String?
        /// `decoded`, `no_event`, `undefined_value`, or empty before a schema.
        public var status: String
        public var postbacks: Int

        /// A group.
        public init(app: AppID, day: String, window: Int, tier: Int, fine: Int?, coarse: String?, status: String, postbacks: Int) {
            (self.app, self.day, self.window, self.tier, self.fine, self.coarse, self.status, self.postbacks) = (app, day, window, tier, fine, coarse, status, postbacks)
        }

        /// Whether the tier lets the postback carry a value: a fine value in window 0 from tier 2, a coarse one from
        /// tier 1 (and in windows 1 and 2, which tier 0 never gets).
        var valueAllowed: Bool { tier >= 1 }
        /// No value where one was allowed.
        var null: Bool { valueAllowed && fine == nil && coarse == nil }
        /// No value where one was allowed, or a fine value of 0 where a fine value was allowed.
        var nullOrZero: Bool {
            guard valueAllowed else { return false }
            if window == 0, tier >= 2 { return fine == nil || fine == 0 }
            return coarse == nil && fine == nil
        }
    }

    /// One app's day.
    public struct Day: Sendable, Equatable {
        public var app: AppID
        public var day: String
        /// Counted install postbacks.
        public var postbacks: Int
        /// Of those, the ones whose tier allows a value.
        public var valueAllowed: Int
        /// Of those, with no value.
        public var nulls: Int
        /// Of those, with no value, or fine value 0 where a fine value was allowed.
        public var nullOrZero: Int
        /// Postbacks whose value the schema in force does not define.
        public var undefined: Int
        /// Coarse values seen, by level.
        public var coarse: [String: Int]
    }

    /// What a symptom is.
    public enum Kind: String, Sendable, CaseIterable {
        case nullOrZero = "null_or_zero"
        case fixedCoarse = "fixed_coarse"
        case undefinedValues = "undefined_values"
        case mixChanged = "mix_changed_after_revision"

        /// The likely cause, in a developer's words.
        public var cause: String {
            switch self {
            case .nullOrZero: "Postbacks whose tier allows a value carry none (half or more), or nearly all carry none or 0: the app does not set values, sets them too late, or a call fails (a misspelled selector, an old SDK)."
            case .fixedCoarse: "Every coarse value is the same: the app sends a fixed coarse value (such as coarseValue: .high with lockWindow: true) instead of one from the schema."
            case .undefinedValues: "The app sets values the schema in force does not define: the app's encoder and the schema disagree."
            case .mixChanged: "The values arriving changed sharply after a schema revision: the revision's effective-from may not match when the app update that uses it shipped."
            }
        }

        /// The docs section that says what to do.
        public var docs: String {
            switch self {
            case .nullOrZero, .fixedCoarse, .undefinedValues: "docs/app-integration.md#4-check-it-in-production"
            case .mixChanged: "docs/schemas.md#which-version-decodes-a-postback"
            }
        }
    }

    /// One symptom of one app.
    public struct Symptom: Sendable, Equatable {
        public var app: AppID
        public var kind: Kind
        /// The first day it shows (for a changed mix, the revision's day).
        public var day: String
        /// The share behind it (0 to 1), where it has one.
        public var share: Double?
        /// The postbacks it is read from.
        public var postbacks: Int
        /// What exactly: the fixed level, the revision.
        public var detail: String
    }

    /// The fewest postbacks a day (or period) needs before a share is read as a symptom.
    public static let minimumPostbacks = 20
    /// The share of postbacks without a value that is a symptom.
    public static let nullShare = 0.5
    /// The share of postbacks without a value or with 0 that is a symptom: 0 is a schema's "nothing yet" value, so
    /// most users may send it; nearly all is another matter.
    public static let nullOrZeroShare = 0.95
    /// The fewest undefined values a day that are a symptom.
    public static let minimumUndefined = 5
    /// The share of undefined values that is a symptom.
    public static let undefinedShare = 0.05
    /// The total variation distance between the fine-value mixes of the 7 days before and after a revision that is a
    /// symptom. Values are compared in eight groups of eight (0-7, 8-15, ...), each side with at least
    /// ``minimumMixPostbacks``: 64 values over a few dozen postbacks differ by chance alone.
    public static let mixDistance = 0.3
    public static let minimumMixPostbacks = 200

    public var days: [Day]
    public var symptoms: [Symptom]

    /// Reads `groups`; `revisions` are each app's schema revisions with their upload days (YYYY-MM-DD).
    public init(groups: [Group], revisions: [(app: AppID, revision: Int, day: String)]) {
        var byDay: [String: Day] = [:]
        for group in groups {
            let key = "\(group.app)|\(group.day)"
            var day = byDay[key] ?? Day(app: group.app, day: group.day, postbacks: 0, valueAllowed: 0, nulls: 0, nullOrZero: 0, undefined: 0, coarse: [:])
            day.postbacks += group.postbacks
            if group.valueAllowed { day.valueAllowed += group.postbacks }
            if group.null { day.nulls += group.postbacks }
            if group.nullOrZero { day.nullOrZero += group.postbacks }
            if group.status == "undefined_value" { day.undefined += group.postbacks }
            if let coarse = group.coarse { day.coarse[coarse, default: 0] += group.postbacks }
            byDay[key] = day
        }
        days = byDay.values.sorted { ($0.app.number, $0.day) < ($1.app.number, $1.day) }
        var symptoms: [Symptom] = []
        for (app, appDays) in Dictionary(grouping: days, by: \.app).sorted(by: { $0.key.number < $1.key.number }) {
            if let first = appDays.first(where: { day in
                day.valueAllowed >= Self.minimumPostbacks && (Double(day.nulls) / Double(day.valueAllowed) >= Self.nullShare
                    || Double(day.nullOrZero) / Double(day.valueAllowed) >= Self.nullOrZeroShare)
            }) {
                let allowed = appDays.reduce(0) { $0 + $1.valueAllowed }
                symptoms.append(Symptom(app: app, kind: .nullOrZero, day: first.day, share: Double(appDays.reduce(0) { $0 + $1.nullOrZero }) / Double(max(allowed, 1)),
                                        postbacks: allowed, detail: "from \(first.day)"))
            }
            var coarse: [String: Int] = [:]
            for day in appDays { coarse.merge(day.coarse, uniquingKeysWith: +) }
            let coarseTotal = coarse.values.reduce(0, +)
            if coarse.count == 1, coarseTotal >= Self.minimumPostbacks, let level = coarse.keys.first, let first = appDays.first(where: { !$0.coarse.isEmpty }) {
                symptoms.append(Symptom(app: app, kind: .fixedCoarse, day: first.day, share: 1, postbacks: coarseTotal, detail: "always \(level)"))
            }
            if let first = appDays.first(where: { $0.undefined >= Self.minimumUndefined && Double($0.undefined) / Double(max($0.postbacks, 1)) >= Self.undefinedShare }) {
                let total = appDays.reduce(0) { $0 + $1.postbacks }
                symptoms.append(Symptom(app: app, kind: .undefinedValues, day: first.day, share: Double(appDays.reduce(0) { $0 + $1.undefined }) / Double(max(total, 1)),
                                        postbacks: total, detail: "from \(first.day)"))
            }
            // A first revision changes nothing the app was sent before: only later ones can disagree with an app update.
            for revision in revisions where revision.app == app && revision.revision > 1 {
                let fine = groups.filter { $0.app == app && $0.window == 0 && $0.fine != nil }
                let before = Self.mix(fine.filter { $0.day < revision.day && $0.day >= Self.day(revision.day, adding: -7) })
                let after = Self.mix(fine.filter { $0.day >= revision.day && $0.day < Self.day(revision.day, adding: 7) })
                guard before.total >= Self.minimumMixPostbacks, after.total >= Self.minimumMixPostbacks else { continue }
                let distance = Set(before.counts.keys).union(after.counts.keys).reduce(0.0) { sum, value in
                    sum + abs(Double(before.counts[value, default: 0]) / Double(before.total) - Double(after.counts[value, default: 0]) / Double(after.total))
                } / 2
                if distance >= Self.mixDistance {
                    symptoms.append(Symptom(app: app, kind: .mixChanged, day: revision.day, share: distance, postbacks: before.total + after.total,
                                            detail: "revision \(revision.revision)"))
                }
            }
        }
        self.symptoms = symptoms
    }

    /// The days as JSON rows (`encoder_days`): counts and shares per app and day.
    public var daysJSON: JSONValue {
        .array(days.map { day in
            .object(JSONObject([
                JSONMember(key: "app", value: .number(String(day.app))), JSONMember(key: "day", value: .string(day.day)),
                JSONMember(key: "postbacks", value: .number(String(day.postbacks))), JSONMember(key: "value_allowed", value: .number(String(day.valueAllowed))),
                JSONMember(key: "null_or_zero_share", value: day.valueAllowed == 0 ? .null : .number(SetupStatus.share(Double(day.nullOrZero) / Double(day.valueAllowed)))),
                JSONMember(key: "undefined_share", value: day.postbacks == 0 ? .null : .number(SetupStatus.share(Double(day.undefined) / Double(day.postbacks)))),
                JSONMember(key: "coarse", value: .object(JSONObject(day.coarse.sorted { $0.key < $1.key }.map { JSONMember(key: $0.key, value: .number(String($0.value))) }))),
            ]))
        })
    }

    /// The symptoms as JSON (`encoder`), each with its cause and docs section.
    public var symptomsJSON: JSONValue {
        .array(symptoms.map { symptom in
            .object(JSONObject([
                JSONMember(key: "app", value: .number(String(symptom.app))), JSONMember(key: "symptom", value: .string(symptom.kind.rawValue)),
                JSONMember(key: "day", value: .string(symptom.day)), JSONMember(key: "share", value: symptom.share.map { .number(SetupStatus.share($0)) } ?? .null),
                JSONMember(key: "postbacks", value: .number(String(symptom.postbacks))), JSONMember(key: "detail", value: .string(symptom.detail)),
                JSONMember(key: "cause", value: .string(symptom.kind.cause)), JSONMember(key: "docs", value: .string(symptom.kind.docs)),
            ]))
        })
    }

    /// One line per symptom, for people.
    public var lines: [String] {
        symptoms.map { "\($0.app): encoder: \($0.kind.rawValue) (\($0.detail)\($0.share.map { String(format: ", %.0f%%", $0 * 100) } ?? "")): \($0.kind.cause) See \($0.kind.docs)." }
    }

    /// Fine values counted in groups of eight.
    private static func mix(_ groups: [Group]) -> (counts: [Int: Int], total: Int) {
        var counts: [Int: Int] = [:]
        for group in groups { if let fine = group.fine { counts[fine / 8, default: 0] += group.postbacks } }
        return (counts, counts.values.reduce(0, +))
    }

    /// `day` moved by `days`.
    static func day(_ day: String, adding days: Int) -> String {
        guard let date = Timestamp.parse(day) else { return day }
        return String(Timestamp.format(date.addingTimeInterval(Double(days) * 86_400)).prefix(10))
    }
}
