/// Why an attribution token's exchange was given up: a closed set, stored in `adservices_jobs.failure_reason` by
/// its ``code``.
public enum TokenFailure: Sendable, Equatable, CustomStringConvertible {
    /// Apple answered 400: the token is not one of Apple's.
    case tokenInvalid
    /// Apple answered 404 to every attempt the policy allows.
    case notFound
    /// The token's 24 hours ran out before Apple answered with a record.
    case tokenExpired
    /// Apple answered a status its documentation does not list.
    case unexpectedStatus(Int)
    /// Apple answered 200 and no record came with it. Not expected: an unreadable 200 is retried as a server failure.
    case unreadableRecord

    /// The code stored and shown to operators: `token_invalid`, `not_found`, `token_expired`,
    /// `unexpected_status_<code>` or `unreadable_record`.
    public var code: String {
        switch self {
        case .tokenInvalid: "token_invalid"
        case .notFound: "not_found"
        case .tokenExpired: "token_expired"
        case .unexpectedStatus(let status): "unexpected_status_\(status)"
        case .unreadableRecord: "unreadable_record"
        }
    }

    public var description: String { code }
}
