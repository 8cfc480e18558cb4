/// One mistake (or doubt) in an app's attribution set-up, at the key path where it is.
public struct SetupFinding: Sendable, Equatable, CustomStringConvertible {
    /// An error stops attribution or copies from working; a warning may.
    public enum Severity: String, Sendable {
        case error, warning
    }

    public var severity: Severity
    /// Where: `SKAdNetworkItems[3].SKAdNetworkIdentifier`, prefixed for Expo with `expo.ios.infoPlist.`.
    public var path: String
    public var message: String

    /// A finding.
    public init(_ severity: Severity, _ path: String, _ message: String) {
        self.severity = severity
        self.path = path
        self.message = message
    }

    public var description: String { "\(severity.rawValue): \(path): \(message)" }
}
