import Foundation
import JWS

/// What Countersign needs from Apple's Apple Ads APIs to name the ids in AdServices records, without I/O: the OAuth 2
/// client secret, the request for each name, and what Apple's answers mean.
///
/// Names come from the Apple Ads Platform API (`https://api.ads.apple.com/v1/`, scoped by ad account) for the orgs it
/// lists in `GET /v1/acls`, and from the Campaign Management API v5 (`https://api.searchads.apple.com/api/v5/`,
/// scoped by org) for the others, until v5's announced sunset on 2027-01-26. Answers are parsed without a value budget:
/// they come from Apple over TLS, and the client reads at most 1 MiB of each.
public enum AppleAdsAPI {
    /// The OAuth 2 audience and the scope Apple Ads tokens are for.
    public static let audience = "https://appleid.apple.com"
    public static let scope = "searchadsorg"

    /// An API user's credentials: the ids Apple Ads shows when the user uploads its public key, and the private key.
    public struct Credentials: Sendable {
        public let clientID: String
        public let teamID: String
        public let keyID: String
        public let privateKey: ECPrivateKey

        /// Creates credentials.
        public init(clientID: String, teamID: String, keyID: String, privateKey: ECPrivateKey) {
            self.clientID = clientID
            self.teamID = teamID
            self.keyID = keyID
            self.privateKey = privateKey
        }
    }

    /// The client secret: an ES256 JWT signed with the API user's key (`kid` its key id; `sub` the client id, `iss` the
    /// team id, `aud` Apple's, `iat` now, `exp` `lifetime` later, which Apple requires to be under 180 days).
    public static func clientSecret(_ credentials: Credentials, issuedAt: Date, lifetime: TimeInterval = 86_400) throws(KeyError) -> String {
        let issued = Int64(issuedAt.timeIntervalSince1970)
        let claims = JSONValue.object(JSONObject([
            JSONMember(key: "sub", value: .string(credentials.clientID)),
            JSONMember(key: "aud", value: .string(audience)),
            JSONMember(key: "iat", value: .number(String(issued))),
            JSONMember(key: "exp", value: .number(String(issued + Int64(min(lifetime, 179 * 86_400))))),
            JSONMember(key: "iss", value: .string(credentials.teamID)),
        ]))
        return try CompactJWS.sign(payload: Array(claims.serialized.utf8), keyID: credentials.keyID, with: credentials.privateKey)
    }

    /// The form body of the token request (client credentials grant).
    public static func tokenRequestBody(_ credentials: Credentials, clientSecret: String) -> String {
        func encoded(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
        }
        return [("grant_type", "client_credentials"), ("client_id", credentials.clientID), ("client_secret", clientSecret), ("scope", scope)]
            .map { "\($0.0)=\(encoded($0.1))" }.joined(separator: "&")
    }

    /// An access token and how long it is valid.
    public struct AccessToken: Sendable, Equatable {
        public let value: String
        public let expiresIn: TimeInterval
    }

    /// Reads the token endpoint's answer (`{"access_token": ..., "token_type": "Bearer", "expires_in": 3600}`).
    public static func accessToken(from body: [UInt8]) -> AccessToken? {
        guard let object = (try? JSONParser.parse(body))?.object, let value = object["access_token"]?.string, !value.isEmpty else { return nil }
        return AccessToken(value: value, expiresIn: TimeInterval(object["expires_in"]?.int64 ?? 3600))
    }

    /// The ad account of `org` among the Platform API's ACLs (`{"result": {"acls": [{"adAccount": {"id", "orgId"}}]}}`);
    /// nil when the Platform API does not list the org (its names then come from v5).
    public static func adAccount(of org: Int64, acls body: [UInt8]) -> Int64? {
        guard case .array(let acls)? = (try? JSONParser.parse(body))?.object?["result"]?.object?["acls"] else { return nil }
        for acl in acls {
            guard let account = acl.object?["adAccount"]?.object, account["orgId"]?.int64 == org, let id = account["id"]?.int64 else { continue }
            return id
        }
        return nil
    }

    /// What can be named: a campaign, an ad group of a campaign, or a keyword of an ad group.
    public enum Entity: Sendable, Hashable {
        case campaign(org: Int64, campaign: Int64)
        case adGroup(org: Int64, campaign: Int64, adGroup: Int64)
        case keyword(org: Int64, campaign: Int64, adGroup: Int64, keyword: Int64)

        public var org: Int64 {
            switch self {
            case .campaign(let org, _), .adGroup(let org, _, _), .keyword(let org, _, _, _): org
            }
        }

        /// The kind as stored: `campaign`, `ad_group` or `keyword`.
        public var kind: String {
            switch self {
            case .campaign: "campaign"
            case .adGroup: "ad_group"
            case .keyword: "keyword"
            }
        }

        /// The id of the thing named.
        public var id: Int64 {
            switch self {
            case .campaign(_, let campaign): campaign
            case .adGroup(_, _, let adGroup): adGroup
            case .keyword(_, _, _, let keyword): keyword
            }
        }

        /// The Platform API path (under `/v1/`) that reads it.
        public var platformPath: String {
            switch self {
            case .campaign(_, let campaign): "campaigns/\(campaign)"
            case .adGroup(_, _, let adGroup): "ad-groups/\(adGroup)"
            case .keyword(_, _, _, let keyword): "keywords/\(keyword)"
            }
        }

        /// The Campaign Management API v5 path (under `/api/v5/`) that reads it.
        public var v5Path: String {
            switch self {
            case .campaign(_, let campaign): "campaigns/\(campaign)"
            case .adGroup(_, let campaign, let adGroup): "campaigns/\(campaign)/adgroups/\(adGroup)"
            case .keyword(_, let campaign, let adGroup, let keyword): "campaigns/\(campaign)/adgroups/\(adGroup)/targetingkeywords/\(keyword)"
            }
        }
    }

    /// The name in an answer about `entity`: `name`, or a keyword's `text`, inside the Platform API's `result`, v5's
    /// `data`, or at the top level (Apple's v5 examples show both). A name holding a character names may not hold
    /// (``LabelText``: control, format such as bidi overrides, zero-width, noncharacters) is no name: nil, so the
    /// entity stays unnamed rather than shown in disguise.
    public static func name(of entity: Entity, from body: [UInt8]) -> String? {
        guard let object = (try? JSONParser.parse(body))?.object else { return nil }
        let item = object["result"]?.object ?? object["data"]?.object ?? object
        let field = if case .keyword = entity { "text" } else { "name" }
        guard let name = item[field]?.string ?? item["name"]?.string, !name.isEmpty, !LabelText.hasRefused(name) else { return nil }
        return name
    }
}
