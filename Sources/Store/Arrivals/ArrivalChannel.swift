/// How a postback reached this server, which says whether an app's developer copies arrive (docs/setup.md).
public enum ArrivalChannel: String, Sendable, CaseIterable {
    case developerCopy = "developer_copy"
    case direct
    case forwarded

    /// What the channel means, in a developer's words (docs/setup.md, `apps status --help`).
    public var definition: String {
        switch self {
        case .developerCopy: "A well-known path at the app's copy domain (--copy-domain): Apple's copy for the developer."
        case .direct: "A well-known path at another host: a network's own postback, or a copy at a domain not registered."
        case .forwarded: "POST /postbacks: sent on by a network or an MMP."
        }
    }

    /// The channel of a request to `route` for `host` (the request's, lower case, no port),
    /// given the copy domain registered for the postback's app.
    public static func of(route: IntakeRoute, host: String?, copyDomain: String?) -> ArrivalChannel {
        if route == .any { return .forwarded }
        if let host, let copyDomain, host == copyDomain { return .developerCopy }
        return .direct
    }
}
