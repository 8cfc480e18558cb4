import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import Logging
import Synchronization
import Testing
import TestSupport

/// A stand-in for Apple's OAuth token endpoint, the Apple Ads Platform API and the Campaign Management API v5: a real
/// HTTP server on loopback that checks the client secret the way Apple does (signature with the API user's public
/// key, header and claims), hands out access tokens, answers ACLs and names, and records every call.
final class AppleAdsAPIStandIn: Sendable {
    /// The API user Apple knows.
    let clientID = "SEARCHADS.stand-in-client"
    let teamID = "SEARCHADS.stand-in-team"
    let keyID = "stand-in-key"
    let publicKey: ECPublicKey
    /// Orgs the Platform API lists, with their ad accounts; other orgs are read through v5.
    let platformAccounts: [Int64: Int64]
    /// Names by org, then `campaign/ID`, `ad_group/ID` or `keyword/ID`.
    let names: [Int64: [String: String]]
    /// The first access token is refused (401) on its first use, as an expired or revoked one would be.
    let refuseFirstToken: Bool
    /// The first name request is answered 429 with `Retry-After: 1`.
    let rateLimitFirstName: Bool

    /// A call as Apple's servers would see it.
    struct Call: Sendable {
        let path: String
        let token: String?
        let context: String?
        let at: Date
        let status: Int
    }

    private struct State {
        var calls: [Call] = []
        var issued: [String] = []
        var refused: Set<String> = []
        var rateLimited = false
        var secretProblems: [String] = []
    }
    private let state = Mutex(State())

    init(publicKey: ECPublicKey, platformAccounts: [Int64: Int64], names: [Int64: [String: String]], refuseFirstToken: Bool = true,
         rateLimitFirstName: Bool = true) {
        self.publicKey = publicKey
        self.platformAccounts = platformAccounts
        self.names = names
        self.refuseFirstToken = refuseFirstToken
        self.rateLimitFirstName = rateLimitFirstName
    }

    var calls: [Call] { state.withLock { $0.calls } }
    var issuedTokens: [String] { state.withLock { $0.issued } }
    /// What was wrong with client secrets sent, one line each (empty when every one was right).
    var secretProblems: [String] { state.withLock { $0.secretProblems } }

    /// Checks a client secret as Apple does; returns what is wrong.
    func problems(clientSecret: String) -> [String] {
        let parts = clientSecret.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Base64.decode(Array(parts[0].utf8), alphabet: .url),
              let payloadBytes = Base64.decode(Array(parts[1].utf8), alphabet: .url),
              let signature = Base64.decode(Array(parts[2].utf8), alphabet: .url),
              let header = (try? JSONParser.parse(headerBytes))?.object, let claims = (try? JSONParser.parse(payloadBytes))?.object else {
            return ["not a compact JWS"]
        }
        var problems: [String] = []
        if !publicKey.verify(rawSignature: signature, message: Array((parts[0] + "." + parts[1]).utf8)) { problems.append("bad signature") }
        if header["alg"]?.string != "ES256" { problems.append("alg is not ES256") }
        if header["kid"]?.string != keyID { problems.append("kid is not the key id") }
        if claims["sub"]?.string != clientID { problems.append("sub is not the client id") }
        if claims["iss"]?.string != teamID { problems.append("iss is not the team id") }
        if claims["aud"]?.string != "https://appleid.apple.com" { problems.append("aud is not Apple's") }
        let now = Int64(Date().timeIntervalSince1970)
        guard let issued = claims["iat"]?.int64, let expires = claims["exp"]?.int64 else { return problems + ["iat or exp missing"] }
        if issued > now + 60 { problems.append("iat is in the future") }
        if expires <= now { problems.append("expired") }
        if expires - issued >= 180 * 86_400 { problems.append("exp is not under 180 days after iat") }
        return problems
    }

    /// Runs the stand-in on a free loopback port and gives `body` its base URL (`http://127.0.0.1:PORT`).
    func serve(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("/auth/oauth2/token") { request, _ -> Response in
            let form = String(buffer: try await request.body.collect(upTo: 1 << 16))
            var fields: [String: String] = [:]
            for pair in form.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            var problems = self.problems(clientSecret: fields["client_secret"] ?? "")
            if fields["grant_type"] != "client_credentials" { problems.append("grant_type is not client_credentials") }
            if fields["client_id"] != self.clientID { problems.append("client_id is wrong") }
            if fields["scope"] != "searchadsorg" { problems.append("scope is not searchadsorg") }
            let token: String? = self.state.withLock { state in
                state.secretProblems += problems
                guard problems.isEmpty else { return nil }
                let token = "access-\(state.issued.count + 1)"
                state.issued.append(token)
                return token
            }
            guard let token else { return Self.json(400, #"{"error": "invalid_client"}"#) }
            return Self.json(200, #"{"access_token": "\#(token)", "token_type": "Bearer", "expires_in": 3600}"#)
        }
        router.get("/v1/**") { request, _ in self.answer(request, api: "platform") }
        router.get("/api/v5/**") { request, _ in self.answer(request, api: "v5") }
        try await AppleAPIStandIn.serveOnLoopback(router, label: "apple-ads-stand-in", body)
    }

    private func answer(_ request: Request, api: String) -> Response {
        let path = request.uri.path
        let authorization = request.headers[.authorization] ?? ""
        let token = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : nil
        let context = request.headers[.init("X-AP-Context")!]
        let (status, body): (Int, String) = state.withLock { state in
            let answer = respond(&state, path: path, token: token, context: context, api: api)
            state.calls.append(Call(path: path, token: token, context: context, at: Date(), status: answer.0))
            return answer
        }
        var headers: HTTPFields = [.contentType: "application/json"]
        if status == 429 { headers[.init("Retry-After")!] = "1" }
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private func respond(_ state: inout State, path: String, token: String?, context: String?, api: String) -> (Int, String) {
            guard let token, state.issued.contains(token), !state.refused.contains(token) else { return (401, "") }
            if refuseFirstToken, token == "access-1" {
                state.refused.insert(token)
                return (401, #"{"error": "token expired"}"#)
            }
            if path == "/v1/acls" {
                let acls = platformAccounts.sorted { $0.key < $1.key }.map { #"{"adAccount": {"id": \#($1), "name": "Account \#($1)", "orgId": \#($0)}, "roles": ["Read Only"]}"# }
                return (200, #"{"result": {"acls": [\#(acls.joined(separator: ", "))]}}"#)
            }
            if rateLimitFirstName, !state.rateLimited {
                state.rateLimited = true
                return (429, #"{"error": "too many requests"}"#)
            }
            // The org: from the ad account (Platform API) or the org id (v5), as the context header gives it.
            let org: Int64?
            let components = path.split(separator: "/").map(String.init)
            let key: String?
            if api == "platform" {
                org = context.flatMap { $0.hasPrefix("adAccountId=") ? Int64($0.dropFirst(12)) : nil }
                    .flatMap { account in platformAccounts.first { $0.value == account }?.key }
                key = components.count == 3 ? ["campaigns": "campaign", "ad-groups": "ad_group", "keywords": "keyword"][components[1]].map { "\($0)/\(components[2])" } : nil
            } else {
                org = context.flatMap { $0.hasPrefix("orgId=") ? Int64($0.dropFirst(6)) : nil }
                // /api/v5/campaigns/C[/adgroups/G[/targetingkeywords/K]]
                key = switch components.count {
                case 4: "campaign/\(components[3])"
                case 6: "ad_group/\(components[5])"
                case 8: "keyword/\(components[7])"
                default: nil
                }
            }
            guard let org, let key else { return (400, #"{"error": "bad context"}"#) }
            if api == "v5", platformAccounts[org] != nil { return (400, #"{"error": "org moved to the Platform API"}"#) }
            guard let name = names[org]?[key] else { return (404, #"{"error": "not found"}"#) }
            let field = key.hasPrefix("keyword/") ? "text" : "name"
            let wrapper = api == "platform" ? "result" : "data"
            return (200, #"{"\#(wrapper)": {"id": \#(key.split(separator: "/")[1]), "\#(field)": "\#(name)"}}"#)
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
