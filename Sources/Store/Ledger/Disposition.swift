import Foundation
import Postback

/// What storing one intake did.
public enum Disposition: String, Sendable, Equatable {
    /// A new postback row (or an unverifiable row upgraded by a verified copy).
    case stored
    /// The same dedup key with identical content: acknowledged, not counted again.
    case duplicate
    /// The same dedup key with different content (unsigned fields changed): acknowledged, not counted.
    case replay
    /// An unverifiable copy (unknown key or version) of a postback already stored verified: kept in the receipts and
    /// counted apart from replays, so a forger cannot change the counted row's numbers.
    case unverifiedCopy = "unverified_copy"
    /// Not a storable postback (invalid or refused): only the receipt is kept.
    case rejected
}

extension Disposition {
    /// What a copy of an already stored postback does, from the stored row's outcome and content hash and the copy's.
    /// `.stored` means the copy replaces the row: a verified copy always replaces one that is not verified.
    static func forCopy(existingOutcome: String, existingHash: Data, incoming: VerificationOutcome, incomingHash: Data) -> Disposition {
        let verified = VerificationOutcome.verified.rawValue
        if existingOutcome != verified, incoming == .verified { return .stored }
        // Checked before content: a copy nobody can verify must not move any of a counted row's numbers, not even its
        // duplicate count, however exactly it repeats the row.
        if existingOutcome == verified, incoming != .verified { return .unverifiedCopy }
        if existingHash == incomingHash { return .duplicate }
        return .replay
    }
}
