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

    public let rule: String
    public let kind: AlertKind
    public let state: State
    /// Unique per rule and occurrence (`firing:` and `resolved:` with when the firing began, `digest:` with the day),
    /// so an occurrence is queued once however many receivers check; part of the webhook's idempotency key.
    public let key: String
    public let at: Date
    public let summary: String
    public let figures: JSONObject

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
            let text = "\(mark) *\(rule)* \(state.rawValue == "digest" ? "" : state.rawValue + ": ")\(summary)"
            return Array(JSONValue.object(JSONObject([JSONMember(key: "text", value: .string(text))])).serialized.utf8)
        }
    }
}
