import AdServices
import AsyncHTTPClient
import Foundation
import Metrics
import NIOCore
import NIOHTTP1
import Store

/// Reads Apple Ads names over HTTP: an OAuth 2 access token (client credentials, with a client secret signed by the
/// API user's key), the Platform API's ACLs to find each org's ad account, then one request per name; orgs the
/// Platform API does not list are read from the Campaign Management API v5.
actor AppleAdsNameClient {
    /// Where Apple's endpoints are and who asks.
    struct Configuration: Sendable {
        var credentials: AppleAdsAPI.Credentials
        var tokenURL: String
        var platformURL: String
        var v5URL: String
        /// Seconds to wait for one answer.
        var requestTimeout: TimeInterval = 10
    }

    /// Why a name could not be read now.
    enum Failure: Error, Equatable {
        /// Apple asked to slow down (429) or failed (5xx, network): try later, after `after` seconds when Apple said.
        case retryLater(after: TimeInterval?)
        /// Apple refused the credentials or answered what this client cannot use; retrying soon will not help.
        case refused(String)
    }

    let configuration: Configuration
    private let metrics: any MetricsFactory
    private let client: HTTPClient
    private var token: (value: String, expires: Date)?
    /// Each org's ad account in the Platform API, nil for orgs it does not list; read once a round.
    private var accounts: [Int64: Int64?]?

    init(configuration: Configuration, metrics: any MetricsFactory, client: HTTPClient = .shared) {
        self.configuration = configuration
        self.metrics = metrics
        self.client = client
    }

    /// Forgets the ACLs, so the next round reads them again (an org may have moved to the Platform API).
    func startRound() {
        accounts = nil
    }

    /// `entity`'s name and where it came from; nil with `.notFound` when Apple does not give it.
    func name(of entity: AppleAdsAPI.Entity) async throws(Failure) -> (name: String?, source: AppleAdsNameStore.Source) {
        let account = try await adAccount(of: entity.org)
        let (url, context, source): (String, String, AppleAdsNameStore.Source) = if let account {
            (Self.join(configuration.platformURL, entity.platformPath), "adAccountId=\(account)", .platform)
        } else {
            (Self.join(configuration.v5URL, entity.v5Path), "orgId=\(entity.org)", .v5)
        }
        let (status, body) = try await authorizedGet(url, context: context)
        // Any other answer about one id (404, or 403 for an id this API user may not read) leaves it unnamed until the
        // name is due again; only the token and the ACLs stop a round.
        guard status == 200, let name = AppleAdsAPI.name(of: entity, from: body) else { return (nil, .notFound) }
        return (name, source)
    }

    private func adAccount(of org: Int64) async throws(Failure) -> Int64? {
        if let known = accounts?[org] { return known }
        let (status, body) = try await authorizedGet(Self.join(configuration.platformURL, "acls"), context: nil)
        guard status == 200 else { throw .refused("Apple answered \(status) for the ACLs") }
        let account = AppleAdsAPI.adAccount(of: org, acls: body)
        accounts = (accounts ?? [:]).merging([org: account]) { $1 }
        return account
    }

    /// GET with the access token; a 401 (the token expired or was revoked) gets a new token and one more try.
    private func authorizedGet(_ url: String, context: String?) async throws(Failure) -> (Int, [UInt8]) {
        for attempt in 1...2 {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Authorization", value: "Bearer \(try await accessToken())")
            if let context { request.headers.add(name: "X-AP-Context", value: context) }
            let (status, body) = try await send(request)
            if status == 401, attempt == 1 {
                token = nil
                continue
            }
            return (status, body)
        }
        throw .refused("Apple refused a new access token too")
    }

    private func accessToken() async throws(Failure) -> String {
        if let token, token.expires > Date().addingTimeInterval(60) { return token.value }
        let secret: String
        do { secret = try AppleAdsAPI.clientSecret(configuration.credentials, issuedAt: Date()) } catch {
            throw .refused("cannot sign the client secret: \(error)")
        }
        var request = HTTPClientRequest(url: configuration.tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: AppleAdsAPI.tokenRequestBody(configuration.credentials, clientSecret: secret)))
        let (status, body) = try await send(request)
        guard status == 200 else { throw .refused("Apple's token endpoint answered \(status); check the client id, team id, key id and key") }
        guard let answer = AppleAdsAPI.accessToken(from: body) else { throw .refused("Apple's token endpoint answered without an access token") }
        token = (answer.value, Date().addingTimeInterval(answer.expiresIn))
        return answer.value
    }

    /// Sends `request`; 429 and 5xx answers and network errors are ``Failure/retryLater(after:)``.
    private func send(_ request: HTTPClientRequest) async throws(Failure) -> (Int, [UInt8]) {
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(configuration.requestTimeout * 1000)))
            let status = Int(response.status.code)
            Counter(label: "countersign_apple_ads_requests_total", dimensions: [("status", String(status))], factory: metrics).increment()
            if status == 429 || status >= 500 {
                throw Failure.retryLater(after: response.headers.first(name: "Retry-After").flatMap(TimeInterval.init))
            }
            return (status, Array(buffer: try await response.body.collect(upTo: 1 << 20)))
        } catch let failure as Failure {
            throw failure
        } catch {
            Counter(label: "countersign_apple_ads_requests_total", dimensions: [("status", "network")], factory: metrics).increment()
            throw .retryLater(after: nil)
        }
    }

    private static func join(_ base: String, _ path: String) -> String {
        (base.hasSuffix("/") ? base : base + "/") + path
    }
}
