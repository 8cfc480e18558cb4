import Hummingbird
import Store

/// Guards one group of private routes: a bearer API key in the Authorization header (the scheme name in any case),
/// never in the URL, with the scope the group declares. It runs after the router has matched the route, so the
/// scope follows the route a request reached, whatever the spelling of its path (repeated or trailing slashes).
/// The key's grant goes into the context, so routes can check the apps it covers.
struct RequireScope: RouterMiddleware {
    typealias Context = AppRequestContext
    /// The scope every route of the group needs.
    let scope: APIScope
    let store: StoreDatabase

    /// Query parameters that look like credentials; a key there ends up in proxy logs, so it is refused.
    static var credentialParameters: Set<String> { ["api_key", "apikey", "key", "token", "access_token"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
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

/// The private API (`/v1/...` behind an API key), one route group per scope. Route tables receive this, never the
/// router itself, so a private route cannot be added without the scope it needs.
struct PrivateAPI {
    /// Routes that read (reports, conversions, intake, postbacks, schemas, names, apps, Apple Ads records and jobs).
    let read: RouterGroup<AppRequestContext>
    /// Routes that change schemas and names (schema uploads, campaign names, the ad-network registry).
    let schemas: RouterGroup<AppRequestContext>
    /// Routes that administer the installation (the app registry, forwarding to partners).
    let admin: RouterGroup<AppRequestContext>
    /// The published schema of one app: open to all when the app says so, else to keys with the encoder scope.
    let published: RouterGroup<AppRequestContext>

    /// The groups under `/v1` of `router`, each checking its scope with keys from `store`.
    init(router: Router<AppRequestContext>, store: StoreDatabase) {
        let v1 = router.group("v1")
        read = v1.group().add(middleware: RequireScope(scope: .read, store: store))
        schemas = v1.group().add(middleware: RequireScope(scope: .schemas, store: store))
        admin = v1.group().add(middleware: RequireScope(scope: .admin, store: store))
        published = v1.group().add(middleware: PublishedSchemaAccess(store: store))
    }
}
