import Hummingbird
import Store

/// Guards the private API: a bearer API key in the Authorization header (the scheme name in any case), never in the
/// URL, with the scope the request needs: `read` to read (GET), `schemas` to change schemas and names (PUT, DELETE),
/// `admin` to change the app registry and for everything under `/v1/forwarding` (partner URLs are the operator's).
/// The key's grant goes into the context, so routes can check the apps it covers.
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let store: StoreDatabase

    /// Query parameters that look like credentials; a key there ends up in proxy logs, so it is refused.
    static var credentialParameters: Set<String> { ["api_key", "apikey", "key", "token", "access_token"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let scope: APIScope = if request.uri.path.hasPrefix("/v1/forwarding") { .admin }
            else if request.method == .get || request.method == .head { .read }
            else if request.uri.path.hasPrefix("/v1/apps") { .admin } else { .schemas }
        var context = context
        context.grant = try await Self.authorize(request, store: store, scope: scope)
        return try await next(request, context)
    }

    /// The grant of the request's key when it has `scope`; otherwise 401 (no key, an unknown or revoked key, a key in
    /// the URL) or 403 `insufficient_scope`, each with `WWW-Authenticate: Bearer` as RFC 6750 asks.
    static func authorize(_ request: Request, store: StoreDatabase, scope: APIScope) async throws -> APIKeyGrant {
        if request.uri.queryParameters.contains(where: { credentialParameters.contains(String($0.key).lowercased()) }) {
            throw APIError(.unauthorized, .apiKeyInQuery, "send the API key as 'Authorization: Bearer <key>', never in the URL",
                           headers: challenge(nil))
        }
        guard let header = request.headers[.authorization], header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            throw APIError(.unauthorized, .missingAPIKey, "this route needs 'Authorization: Bearer <key>' (create one with countersign apikey create)",
                           headers: challenge(nil))
        }
        let key = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let grant = try await store.apiKeys.grant(for: key) else {
            throw APIError(.unauthorized, .invalidAPIKey, "the API key is unknown or revoked", headers: challenge("invalid_token"))
        }
        guard grant.allows(scope) else {
            throw APIError(.forbidden, .insufficientScope,
                           "this API key lacks the \(scope.rawValue) scope; create one with countersign apikey create --scope \(scope.rawValue)",
                           headers: challenge("insufficient_scope", scope: scope))
        }
        return grant
    }

    static func challenge(_ error: String?, scope: APIScope? = nil) -> HTTPFields {
        var value = "Bearer realm=\"countersign\""
        if let error { value += ", error=\"\(error)\"" }
        if let scope { value += ", scope=\"\(scope.rawValue)\"" }
        return [.wwwAuthenticate: value]
    }
}
