import Foundation
import JWS
import Postback

/// One received body with its verification result and the policy's decision, ready to persist.
///
/// Everything that can be computed before the write (the row's columns, its content hash) is computed here,
/// in the request's own task, so the single writer only runs SQL.
public struct Intake: Sendable {
    /// When it arrived.
    public let receivedAt: Date
    /// The peer's address, if known.
    public let remoteAddress: String?
    /// The path it arrived at.
    public let route: IntakeRoute
    /// The body exactly as received.
    public let body: [UInt8]
    /// What verification found.
    public let result: VerificationResult
    /// What the policy decided.
    public let decision: PolicyDecision
    /// Who a rejected body claims to be (kept with its receipt); nil for a stored postback, whose row says it.
    public var claimed: ClaimedIdentity?
    /// How it reached the server, for the arrival log (``ArrivalLog``).
    public var channel: ArrivalChannel = .direct
    let receivedAtText: String
    let reason: String?
    /// The postback row to store; nil when the body is rejected.
    let row: PostbackRow?
    /// The row's decoding with the schema the catalogue held when it was submitted (``GroupCommitWriter``); the
    /// commit keeps it when that is still the app's current revision, else decodes again.
    var decoding: PostbackDecoding?

    /// Creates an intake and prepares its row.
    public init(receivedAt: Date, remoteAddress: String?, route: IntakeRoute, body: [UInt8], result: VerificationResult, decision: PolicyDecision) {
        self.receivedAt = receivedAt
        self.remoteAddress = remoteAddress
        self.route = route
        self.body = body
        self.result = result
        self.decision = decision
        receivedAtText = Timestamp.format(receivedAt)
        if case .refuse(let problem) = decision {
            reason = problem.reason.rawValue
            row = nil
        } else {
            var policyReason: VerificationReason?
            if case .accept(_, let why) = decision { policyReason = why }
            let reason = (result.problem?.reason ?? policyReason)?.rawValue
            self.reason = reason
            row = result.postback.map { [receivedAtText] in PostbackRow(postback: $0, intake: (route, result, decision), receivedAt: receivedAtText, reason: reason) }
        }
    }

    /// Whether the body is rejected (invalid or refused): only its receipt is stored, never a postback row.
    public var isRejected: Bool { row == nil }

    /// The same intake with only the first `bytes` of its body: its receipt is still stored and counted, the rest of
    /// its bytes are not (a rejected body beyond its budget keeps none, a long one only its start).
    public func keepingBody(bytes: Int) -> Intake {
        var kept = Intake(receivedAt: receivedAt, remoteAddress: remoteAddress, route: route, body: Array(body.prefix(bytes)), result: result, decision: decision)
        kept.claimed = claimed
        kept.channel = channel
        return kept
    }

    /// The row's decoding under the catalogue's current revision of its app's schema: the one computed ahead when it
    /// is still current, else computed now.
    func currentDecoding(_ schemas: SchemaCatalog.Snapshot) -> PostbackDecoding? {
        guard row != nil, let postback = result.postback else { return nil }
        let entry = schemas.entry(app: postback.app)
        if let decoding, decoding.revision == entry?.revision { return decoding }
        return PostbackDecoding(entry, postback: postback, receivedAt: receivedAt)
    }
}
