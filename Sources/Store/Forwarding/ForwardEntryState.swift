/// The state of an outbox entry an operator sees.
public enum ForwardEntryState: String, Sendable, CaseIterable {
    /// Waiting for its next attempt (or being delivered, when `claimed_until` is in the future).
    case pending
    /// Retried until its deadline without success; kept until `forward retry`.
    case dead
}
