import Foundation

/// One claimed attempt to POST a body to a URL outside: what the forwarder and the alert sender both send, with the
/// same headers, timeout handling and failure labels.
public protocol WebhookDelivery: Sendable {
    /// Where the body goes.
    var url: String { get }
    /// How long the attempt may take.
    var timeout: TimeInterval { get }
    /// What is sent.
    var body: [UInt8] { get }
    /// Sent as `Idempotency-Key`, the same on every attempt.
    var idempotencyKey: String { get }
    /// Attempts made before this one.
    var attempts: Int { get }
    /// A header with the receiver's secret, when one is sent.
    var header: PartnerHeader? { get }
}

extension ForwardDelivery: WebhookDelivery {
    /// The postback's dedup key.
    public var idempotencyKey: String { dedupKey }
}
