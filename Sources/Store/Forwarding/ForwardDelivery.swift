import Foundation

/// One outbox entry claimed for one delivery attempt: the body its rule's template made, the idempotency key, the
/// partner's header, and the claim that alone may record the outcome.
public struct ForwardDelivery: Sendable, Equatable {
    /// The entry's id.
    public let id: Int64
    /// The rule (partner) it is for, and where it goes.
    public let partner: String
    public let url: String
    /// How long the attempt may take.
    public let timeout: TimeInterval
    /// The stored postback's id and dedup key (sent as the idempotency key, the same on every attempt).
    public let postbackID: Int64
    public let dedupKey: String
    /// What is sent: the body exactly as the device sent it (`original`), or as the rule's template made it.
    public let body: [UInt8]
    /// The partner's header and secret, when the rule sends one.
    public let header: PartnerHeader?
    /// Attempts made before this one.
    public let attempts: Int
    /// Retried until this moment, then dead.
    public let deadline: Date
    /// The claim this attempt holds.
    public let claimID: String

    /// The same delivery with another body.
    func with(body: [UInt8]) -> ForwardDelivery {
        ForwardDelivery(id: id, partner: partner, url: url, timeout: timeout, postbackID: postbackID, dedupKey: dedupKey, body: body, header: header,
                        attempts: attempts, deadline: deadline, claimID: claimID)
    }
}
