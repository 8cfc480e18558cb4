import Foundation
import JWS

/// An attribution token as an app sends it: the raw token (text/plain) or `{"token", "app", "install-id", "token-created-at"}`.
public struct TokenSubmission: Sendable, Equatable {
    /// The token exactly as `AAAttribution.attributionToken()` returned it.
    public var token: String
    /// The caller's app id, if given.
    public var app: String?
    /// The caller's install id, if given.
    public var installID: String?
    /// When the device made the token, if the app says; the 24-hour lifetime counts from here (else from receipt).
    public var tokenCreatedAt: Date?

    /// Creates a submission.
    public init(token: String, app: String? = nil, installID: String? = nil, tokenCreatedAt: Date? = nil) {
        self.token = token
        self.app = app
        self.installID = installID
        self.tokenCreatedAt = tokenCreatedAt
    }

    /// How far in the future `token-created-at` may lie, for devices whose clocks run a little fast.
    public static let allowedClockSkew: TimeInterval = 300

    /// A problem with the submission as of `now`: a `token-created-at` in the future (beyond the allowed skew) would
    /// otherwise keep a job alive, and retried, past Apple's 24 hours.
    public func problem(now: Date) -> RecordProblem? {
        guard let tokenCreatedAt, tokenCreatedAt.timeIntervalSince(now) > Self.allowedClockSkew else { return nil }
        return RecordProblem(field: "token-created-at", message: "is in the future; send the time the device made the token, such as \(now.formatted(.iso8601))")
    }

    /// The longest token accepted, in bytes (Apple's tokens are a few hundred).
    public static let maximumTokenLength = 8 * 1024

    /// Reads a request body. JSON when the content type says so, or when there is none and the body starts with `{`
    /// (a base64 token never does); otherwise the body is the token, with surrounding whitespace ignored.
    public static func parse(_ bytes: [UInt8], contentType: String?) -> Result<TokenSubmission, RecordProblem> {
        let mediaType = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        let firstByte = bytes.first { !isWhitespace($0) }
        if mediaType == "application/json" || (mediaType == nil && firstByte == UInt8(ascii: "{")) {
            return parseJSON(bytes)
        }
        if let mediaType, mediaType != "text/plain" {
            return .failure(RecordProblem(field: nil, message: "send the token as text/plain or a JSON object as application/json, not \(mediaType)"))
        }
        return checkedToken(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)).map { TokenSubmission(token: $0) }
    }

    static func parseJSON(_ bytes: [UInt8]) -> Result<TokenSubmission, RecordProblem> {
        let object: JSONObject
        do {
            guard let parsed = try JSONParser.parse(bytes, limits: .publicBody).object else {
                return .failure(RecordProblem(field: nil, message: "the body is not a JSON object"))
            }
            object = parsed
        } catch {
            return .failure(RecordProblem(field: nil, message: "the body is not a JSON object: \(error.located(in: bytes))"))
        }
        let known: Set<String> = ["token", "app", "install-id", "token-created-at"]
        if let unknown = object.members.first(where: { !known.contains($0.key) }) {
            return .failure(RecordProblem(field: unknown.key, message: "unknown member; expected token, app, install-id or token-created-at"))
        }
        guard let token = object["token"]?.string else {
            return .failure(RecordProblem(field: "token", message: "is required and must be a string"))
        }
        var submission = TokenSubmission(token: token)
        for (key, path) in [("app", \TokenSubmission.app), ("install-id", \TokenSubmission.installID)] {
            switch object[key] {
            case nil, .null?: break
            case .string(let text)? where !text.isEmpty && text.unicodeScalars.count <= 256 && !LabelText.hasRefused(text):
                submission[keyPath: path] = text
            default: return .failure(RecordProblem(field: key, message: "must be a string of 1 to 256 characters without \(LabelText.refusedKinds)"))
            }
        }
        switch object["token-created-at"] {
        case nil, .null?: break
        case .string(let text)?:
            // RFC 3339, with or without fractional seconds.
            guard let date = (try? Date(text, strategy: .iso8601)) ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) else {
                return .failure(RecordProblem(field: "token-created-at", message: "must be an ISO 8601 time such as 2026-11-22T08:00:00Z"))
            }
            submission.tokenCreatedAt = date
        default: return .failure(RecordProblem(field: "token-created-at", message: "must be an ISO 8601 time string"))
        }
        return checkedToken(token).map { _ in submission }
    }

    /// A token is 1 to ``maximumTokenLength`` base64 characters (standard or URL alphabet, padding allowed), nothing else.
    static func checkedToken(_ token: String) -> Result<String, RecordProblem> {
        guard !token.isEmpty else { return .failure(RecordProblem(field: "token", message: "is empty")) }
        guard token.utf8.count <= maximumTokenLength else {
            return .failure(RecordProblem(field: "token", message: "is longer than \(maximumTokenLength) bytes"))
        }
        guard token.utf8.allSatisfy(isTokenByte) else {
            return .failure(RecordProblem(field: "token", message: "must be base64 text exactly as attributionToken() returned it (no spaces or line breaks inside)"))
        }
        return .success(token)
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
