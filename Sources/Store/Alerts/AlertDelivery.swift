import Foundation

/// One alert claimed for one delivery attempt to its rule's webhook.
public struct AlertDelivery: WebhookDelivery, Equatable {
    /// The outbox entry's id, its rule and the occurrence's key.
    public let id: Int64
    public let rule: String
    public let key: String
    /// The rule's webhook, as it is now.
    public let url: String
    /// The alert in the rule's format, as it is now.
    public let body: [UInt8]
    /// Attempts made before this one.
    public let attempts: Int
    /// Retried until this moment, then dead.
    public let deadline: Date
    /// The claim this attempt holds.
    public let claimID: String

    /// ``AlertRule/timeout``.
    public var timeout: TimeInterval { AlertRule.timeout }
    /// `alert:RULE:KEY`, as ``AlertEvent/idempotencyKey``.
    public var idempotencyKey: String { "alert:\(rule):\(key)" }
    /// None: a sink's token goes in its URL.
    public var header: PartnerHeader? { nil }
}
