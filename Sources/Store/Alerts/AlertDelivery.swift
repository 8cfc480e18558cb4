import Foundation

/// One alert claimed for one delivery attempt to its rule's webhook.
public struct AlertDelivery: WebhookDelivery, Equatable {
    /// The outbox entry's id, its rule and the occurrence's key.
    public let id: Int64
    public let rule: String
    public let key: String
    public let url: String
    public let body: [UInt8]
    public let attempts: Int
    /// Retried until this moment, then dead.
    public let deadline: Date
    /// The claim this attempt holds.
    public let claimID: String

    public var timeout: TimeInterval { AlertRule.timeout }
    public var idempotencyKey: String { "alert:\(rule):\(key)" }
    public var header: PartnerHeader? { nil }
}
