import Foundation

/// Apple's rules for exchanging an attribution token (adservices.md §2), as a pure decision.
public struct RetryPolicy: Sendable, Equatable {
    /// Tokens live 24 hours.
    public var tokenLifetime: TimeInterval = 24 * 3600
    /// After a 404: retry at 5-second intervals ...
    public var notFoundInterval: TimeInterval = 5
    /// ... with at most three attempts in all.
    public var notFoundAttempts = 3
    /// After a 500 or a network error: back off from this delay, doubling, up to `maximumBackoff`, until the token expires.
    public var initialBackoff: TimeInterval = 5
    public var maximumBackoff: TimeInterval = 3600
    /// Apple holds 404 answers up to 1 s, so the client waits longer than that.
    public var requestTimeout: TimeInterval = 5

    /// Apple's schedule.
    public init() {}

    /// What an exchange answer means for the job.
    public enum Answer: Sendable, Equatable {
        case status(Int)
        case networkError
    }

    /// What to do next.
    public enum Decision: Sendable, Equatable {
        /// Store the record (200).
        case store
        /// Stop: the token is invalid (400), not found after the allowed attempts, or expired.
        case fail(TokenFailure)
        /// Try again after this many seconds.
        case retry(after: TimeInterval)
    }

    /// Decides after attempt number `attempts` (1 for the first) for a token created `tokenAge` seconds ago, of which
    /// `notFoundAnswers` (this one included) were 404 and `serverFailures` (this one included) were 500 or network errors.
    public func decide(_ answer: Answer, attempts: Int, notFoundAnswers: Int, serverFailures: Int, tokenAge: TimeInterval) -> Decision {
        switch answer {
        case .status(200): return .store
        case .status(400): return .fail(.tokenInvalid)
        case .status(404):
            guard notFoundAnswers < notFoundAttempts else { return .fail(.notFound) }
            return tokenAge + notFoundInterval < tokenLifetime ? .retry(after: notFoundInterval) : .fail(.tokenExpired)
        case .status(let code) where code >= 500:
            return backOff(serverFailures: serverFailures, tokenAge: tokenAge)
        case .networkError:
            return backOff(serverFailures: serverFailures, tokenAge: tokenAge)
        case .status(let code):
            return .fail(.unexpectedStatus(code))
        }
    }

    /// Whether `answer` counts toward the 404 limit.
    public static func isNotFound(_ answer: Answer) -> Bool { answer == .status(404) }

    /// Whether `answer` is a server failure (5xx or no answer), retried with backoff.
    public static func isServerFailure(_ answer: Answer) -> Bool {
        switch answer {
        case .networkError: true
        case .status(let code): code >= 500
        }
    }

    private func backOff(serverFailures: Int, tokenAge: TimeInterval) -> Decision {
        let delay = min(maximumBackoff, initialBackoff * pow(2, Double(max(serverFailures - 1, 0))))
        return tokenAge + delay < tokenLifetime ? .retry(after: delay) : .fail(.tokenExpired)
    }
}
