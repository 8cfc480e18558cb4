import JWS

/// Why a postback is not simply verified: a closed set of stable codes.
///
/// The raw values appear in HTTP error bodies, logs, metrics labels and the database; never rename one.
public enum VerificationReason: String, Sendable, CaseIterable, Codable {
    // Invalid: the body is not a well-formed postback.
    /// The body is not a JSON object.
    case malformedJSON = "malformed_json"
    /// A JSON object, but neither an AAK nor a SKAN postback.
    case unknownFormat = "unknown_format"
    /// An AAK postback at the SKAN route or the reverse.
    case wrongProtocol = "wrong_protocol"
    /// `jws-string` is not three non-empty segments.
    case malformedJWS = "malformed_jws"
    /// A JWS segment is not strict base64url.
    case badBase64URL = "bad_base64url"
    /// A SKAN `attribution-signature` is not strict base64.
    case badBase64 = "bad_base64"
    /// The JWS header is not a JSON object with string members.
    case malformedHeader = "malformed_header"
    /// The JWS `alg` is not ES256.
    case unsupportedAlg = "unsupported_alg"
    /// The JWS header has no `kid`.
    case missingKid = "missing_kid"
    /// The JWS header has `crit`.
    case critHeader = "crit_header"
    /// The ES256 signature is not exactly 64 bytes.
    case signatureLength = "signature_length"
    /// The signature does not verify.
    case badSignature = "bad_signature"
    /// A required field is absent.
    case missingField = "missing_field"
    /// A field has the wrong JSON type.
    case wrongType = "wrong_type"
    /// A field's value is outside its documented range or set.
    case fieldOutOfRange = "field_out_of_range"
    /// Fields that exclude each other are both present (fine and coarse value; source-app-id and source-domain).
    case conflictingFields = "conflicting_fields"
    /// A postback nobody can verify yet that is larger than Apple's ever are (``PostbackBody/unverifiableKept``): it is
    /// not kept for `reverify`.
    case tooLarge = "too_large"
    // Unverifiable: kept, never counted, re-checkable when keys change.
    /// No pinned key has this `kid`.
    case unknownKid = "unknown_kid"
    /// A SKAdNetwork version whose signed-field order is not known.
    case unknownVersion = "unknown_version"
    /// No pinned key verifies this SKAdNetwork version's curve, or the postback carries no signature.
    case noKey = "no_key"
    // Refused by policy though the signature is good.
    /// Signed with a development key while development postbacks are not allowed.
    case developmentNotAllowed = "development_not_allowed"
    /// The ad network id is not in the server's accepted list (refused), or not in the app's registry entry (stored,
    /// never counted).
    case adNetworkNotAccepted = "ad_network_not_accepted"
    /// The installation keeps an app registry and this postback's app is not in it: stored, never counted.
    case appNotRegistered = "app_not_registered"

    /// The outcome a failure of this kind leads to.
    public var outcome: VerificationOutcome {
        switch self {
        case .unknownKid, .unknownVersion, .noKey: .unverifiable
        case .developmentNotAllowed, .adNetworkNotAccepted, .appNotRegistered: .verified
        default: .invalid
        }
    }

    init(_ failure: JWSFailure) {
        switch failure {
        case .malformedJWS: self = .malformedJWS
        case .badBase64URL: self = .badBase64URL
        case .malformedHeader: self = .malformedHeader
        case .unsupportedAlg: self = .unsupportedAlg
        case .missingKid: self = .missingKid
        case .critHeader: self = .critHeader
        case .signatureLength: self = .signatureLength
        case .unknownKid: self = .unknownKid
        case .badSignature: self = .badSignature
        }
    }
}

/// The three outcomes of verification.
public enum VerificationOutcome: String, Sendable, Codable, CaseIterable {
    /// Apple's signature verifies with a pinned key.
    case verified
    /// Well-formed but not checkable now (unknown key or version): kept, not counted.
    case unverifiable
    /// Malformed, out of range or badly signed: never counted.
    case invalid
}

/// A field-level problem: which rule, which field, and a sentence for people.
public struct FieldProblem: Error, Sendable, Equatable {
    /// The rule broken.
    public let reason: VerificationReason
    /// The JSON key concerned, if one.
    public let field: String?
    /// One line for people.
    public let message: String

    /// Creates a problem.
    public init(_ reason: VerificationReason, field: String?, _ message: String) {
        self.reason = reason
        self.field = field
        self.message = message
    }
}

/// Which pinned key verified a postback.
public struct SignerIdentity: Sendable, Equatable {
    /// The key's id.
    public let keyID: String
    /// Production or development.
    public let environment: KeyEnvironment
}

/// What verifying one body found. Expected failures are values, not thrown errors.
public enum VerificationResult: Sendable {
    /// Apple's signature verifies; the postback is decoded and within range.
    case verified(Postback, SignerIdentity)
    /// Decoded, but no pinned key or known field order can check it.
    case unverifiable(Postback, FieldProblem)
    /// Rejected; `family` is known when the body was recognisably AAK or SKAN.
    case invalid(FieldProblem, family: PostbackProtocol?)

    /// The outcome.
    public var outcome: VerificationOutcome {
        switch self {
        case .verified: .verified
        case .unverifiable: .unverifiable
        case .invalid: .invalid
        }
    }

    /// The postback, when one was decoded.
    public var postback: Postback? {
        switch self {
        case .verified(let postback, _), .unverifiable(let postback, _): postback
        case .invalid: nil
        }
    }

    /// The reason, when not verified.
    public var problem: FieldProblem? {
        switch self {
        case .verified: nil
        case .unverifiable(_, let problem), .invalid(let problem, _): problem
        }
    }
}

/// What the operator trusts beyond the signature.
public struct TrustPolicy: Sendable {
    /// Whether development-key postbacks are accepted (flagged, never counted as production).
    public var allowDevelopment: Bool
    /// Ad network ids accepted; empty accepts any.
    public var acceptedAdNetworks: Set<String>
    /// The app registry's rules by app id; nil when the installation keeps no registry (every app is served).
    public var apps: [AppID: AppRule]?

    /// One registered app's own policy, applied on top of the server's.
    public struct AppRule: Sendable, Equatable {
        /// Ad network ids accepted for this app; empty accepts those the server accepts.
        public var acceptedAdNetworks: Set<String>
        /// Whether this app's development postbacks are accepted even when the server's setting refuses them.
        public var allowDevelopment: Bool

        public init(acceptedAdNetworks: Set<String> = [], allowDevelopment: Bool = false) {
            self.acceptedAdNetworks = acceptedAdNetworks
            self.allowDevelopment = allowDevelopment
        }
    }

    /// Creates a policy.
    public init(allowDevelopment: Bool = false, acceptedAdNetworks: Set<String> = [], apps: [AppID: AppRule]? = nil) {
        self.allowDevelopment = allowDevelopment
        self.acceptedAdNetworks = acceptedAdNetworks
        self.apps = apps
    }

    /// What to do with a verification result. Only the server's own ad-network list (for a verified postback: an
    /// unverifiable one is kept whatever network it names) and development keys refuse a postback; the app registry
    /// never refuses one, it only decides whether it counts (``notCountedReason(app:adNetwork:)``),
    /// so a registry change can count it later.
    public func decide(_ result: VerificationResult) -> PolicyDecision {
        switch result {
        case .invalid(let problem, _):
            return .refuse(problem)
        case .unverifiable:
            // Kept whatever network it names: no pinned key signed the name. It never counts; `reverify` applies the
            // network list once its key is pinned.
            return .keep
        case .verified(let postback, let signer):
            if let refusal = networkRefusal(postback) { return .refuse(refusal) }
            if signer.environment == .development {
                guard allowDevelopment || apps?[postback.app]?.allowDevelopment == true else {
                    return .refuse(FieldProblem(.developmentNotAllowed, field: nil,
                        "signed with development key \(signer.keyID); start with --allow-development (or allow it for the app) to accept it"))
                }
                return .accept(countable: false)
            }
            let reason = notCountedReason(app: postback.app, adNetwork: postback.adNetworkID)
            return .accept(countable: reason == nil, reason: reason)
        }
    }

    /// Why a production-verified postback of `app` from `adNetwork` does not count under this policy, or nil when it
    /// counts: an ad network the server or the app's registry entry does not accept, or an app outside the registry.
    /// Ingest stores the answer; `reverify` and a registry change apply it again to every stored postback.
    public func notCountedReason(app: AppID, adNetwork: String) -> VerificationReason? {
        if !acceptedAdNetworks.isEmpty, !acceptedAdNetworks.contains(adNetwork) { return .adNetworkNotAccepted }
        guard let apps else { return nil }
        guard let rule = apps[app] else { return .appNotRegistered }
        if !rule.acceptedAdNetworks.isEmpty, !rule.acceptedAdNetworks.contains(adNetwork) { return .adNetworkNotAccepted }
        return nil
    }

    /// The server's own ad-network list refuses the postback (the registry's lists only stop it counting).
    private func networkRefusal(_ postback: Postback) -> FieldProblem? {
        guard !acceptedAdNetworks.isEmpty, !acceptedAdNetworks.contains(postback.adNetworkID) else { return nil }
        return FieldProblem(.adNetworkNotAccepted, field: "ad-network-id", "ad network \(postback.adNetworkID) is not accepted here")
    }
}

/// The policy's verdict on one result.
public enum PolicyDecision: Sendable, Equatable {
    /// Store it; `countable` is true only for production-verified postbacks; `reason` says why one is not (an app
    /// outside the registry), when it is not its environment.
    case accept(countable: Bool, reason: VerificationReason? = nil)
    /// Store it as unverifiable: kept, not counted, re-checkable.
    case keep
    /// Do not store it as a postback.
    case refuse(FieldProblem)
}
