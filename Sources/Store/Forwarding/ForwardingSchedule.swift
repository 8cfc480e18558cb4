import Foundation

/// When a failed delivery is tried again, as a pure decision: exponential backoff with jitter, a partner's
/// `Retry-After` respected, and a dead letter once the entry's deadline has passed.
public struct ForwardingSchedule: Sendable, Equatable {
    /// The delay ceiling after the first failure; it doubles with each failure ...
    public var initialBackoff: TimeInterval
    /// ... up to this.
    public var maximumBackoff: TimeInterval

    /// A schedule; the defaults start at 10 s and stop doubling at an hour.
    public init(initialBackoff: TimeInterval = 10, maximumBackoff: TimeInterval = 3600) {
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// What to do after a failed attempt.
    public enum Decision: Sendable, Equatable {
        /// Try again at this moment.
        case retry(at: Date)
        /// Stop: the entry is a dead letter, listed until an operator retries it.
        case dead

        /// What an outbox entry becomes after the failed attempt at `now`: its state, and when it is tried next (or
        /// was given up), in epoch seconds.
        public func entry(now: Date) -> (state: ForwardEntryState, next: Double) {
            switch self {
            case .retry(let at): (.pending, at.timeIntervalSince1970)
            case .dead: (.dead, now.timeIntervalSince1970)
            }
        }
    }

    /// Decides after failed attempt number `attempt` (1 for the first) at `now`, for an entry that may be retried until
    /// `deadline`. The delay is half the ceiling plus a random part of the other half (`jitter` in 0..<1), so receivers
    /// retrying a partner that came back do not arrive together; a `retryAfter` the partner asked for is honoured up to
    /// the maximum backoff. The last retry happens at the deadline itself; a failure at or after it is final.
    public func afterFailure(attempt: Int, now: Date, deadline: Date, retryAfter: TimeInterval?, jitter: Double) -> Decision {
        guard now < deadline else { return .dead }
        let ceiling = min(maximumBackoff, initialBackoff * pow(2, Double(min(max(attempt, 1) - 1, 60))))
        var delay = ceiling / 2 + ceiling / 2 * min(max(jitter, 0), 1)
        if let retryAfter, retryAfter.isFinite, retryAfter > 0 { delay = max(delay, min(retryAfter, maximumBackoff)) }
        return .retry(at: min(now.addingTimeInterval(delay), deadline))
    }

    /// Seconds a `Retry-After` header asks for: a number of seconds, or an HTTP date (RFC 9110 §10.2.3); nil when the
    /// header is absent or unreadable.
    public static func retryAfter(_ header: String?, now: Date) -> TimeInterval? {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return nil }
        if header.allSatisfy(\.isASCIIDigit) { return header.count <= 9 ? TimeInterval(header) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: header).map { max(0, $0.timeIntervalSince(now)) }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
