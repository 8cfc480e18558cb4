import Foundation
import JWS
import Postback

/// One alert to deliver: a rule that started or stopped firing, or a digest, with the body each webhook format gets.
public struct AlertEvent: Sendable, Equatable {
    /// What happened.
    public enum State: String, Sendable, CaseIterable {
        /// The rule's condition started to hold.
        case firing
        /// It holds no longer.
        case resolved
        /// A daily digest.
        case digest
    }

    /// The rule that made it, and its kind.
    public let rule: String
    public let kind: AlertKind
    /// What happened.
    public let state: State
    /// Unique per rule and occurrence (`firing:` and `resolved:` with when the firing began, `digest:` with the day),
    /// so an occurrence is queued once however many receivers check; part of the webhook's idempotency key.
    public let key: String
    /// When the check made it.
    public let at: Date
    /// One sentence (a digest: a line per network).
    public let summary: String
    /// What was measured, by kind.
    public let figures: JSONObject

    /// An alert of `rule`.
    public init(rule: String, kind: AlertKind, state: State, key: String, at: Date, summary: String, figures: JSONObject) {
        self.rule = rule
        self.kind = kind
        self.state = state
        self.key = key
        self.at = at
        self.summary = summary
        self.figures = figures
    }

    /// The webhook's idempotency key: the same on every attempt, different for every alert.
    public var idempotencyKey: String { "alert:\(rule):\(key)" }

    /// The alert a JSON body (``body(_:)`` in `.json`) holds, or nil when it holds none: the outbox keeps alerts so,
    /// and makes each rule's format from them when it sends.
    public init?(json bytes: [UInt8]) {
        guard let object = (try? JSONParser.parse(bytes))?.object, let rule = object["alert"]?.string,
              let kind = object["kind"]?.string.flatMap(AlertKind.init(rawValue:)), let state = object["state"]?.string.flatMap(State.init(rawValue:)),
              let id = object["id"]?.string, id.hasPrefix("alert:\(rule):"), let at = object["at"]?.string.flatMap({ Timestamp.parse($0) }),
              let summary = object["summary"]?.string, let figures = object["figures"]?.object else { return nil }
        self.init(rule: rule, kind: kind, state: state, key: String(id.dropFirst("alert:\(rule):".count)), at: at, summary: summary, figures: figures)
    }

    /// The body POSTed in `format`: JSON with every field, or Slack's `{"text": ...}`.
    public func body(_ format: AlertRule.Format) -> [UInt8] {
        switch format {
        case .json:
            return Array(JSONValue.object(JSONObject([
                JSONMember(key: "alert", value: .string(rule)), JSONMember(key: "kind", value: .string(kind.rawValue)),
                JSONMember(key: "state", value: .string(state.rawValue)), JSONMember(key: "id", value: .string(idempotencyKey)),
                JSONMember(key: "at", value: .string(Timestamp.format(at))), JSONMember(key: "summary", value: .string(summary)),
                JSONMember(key: "figures", value: .object(figures)),
            ])).serialized.utf8)
        case .slack:
            let mark = switch state {
            case .firing: ":rotating_light:"
            case .resolved: ":white_check_mark:"
            case .digest: ":bar_chart:"
            }
            // The time, since a retried alert can arrive after those that followed it.
            let when = Timestamp.format(at).prefix(16).replacingOccurrences(of: "T", with: " ") + " UTC"
            let text = "\(mark) *\(rule)* \(state == .digest ? "" : state.rawValue + " ")(\(when)): \(summary)"
            return Array(JSONValue.object(JSONObject([JSONMember(key: "text", value: .string(text))])).serialized.utf8)
        }
    }
}
