import Postback

/// The path a body arrived at, which says what it may be: AdAttributionKit's well-known path, SKAdNetwork's, or the
/// generic `/postbacks` that takes either. Stored as its raw value in `receipts.route` and `postbacks.route`.
public enum IntakeRoute: String, Sendable, CaseIterable {
    case aak, skan, any

    /// The route of postbacks of `family`.
    public init(_ family: PostbackProtocol) {
        self = family == .aak ? .aak : .skan
    }

    /// The family the route takes; nil takes either.
    public var expected: PostbackProtocol? {
        switch self {
        case .aak: .aak
        case .skan: .skan
        case .any: nil
        }
    }
}
