import Hummingbird
import Store

/// Guards the private API: a bearer API key in the Authorization header, never in the URL.
struct APIKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    let store: StoreDatabase

    /// Query parameters that look like credentials; a key there ends up in proxy logs, so it is refused.
    static var credentialParameters: Set<String> { ["api_key", "apikey", "key", "token", "access_token"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.uri.queryParameters.contains(where: { Self.credentialParameters.contains(String($0.key).lowercased()) }) {
            throw APIError(.unauthorized, .apiKeyInQuery, "send the API key as 'Authorization: Bearer <key>', never in the URL")
        }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw APIError(.unauthorized, .missingAPIKey, "this route needs 'Authorization: Bearer <key>' (create one with countersign apikey create)")
        }
        let key = String(header.dropFirst("Bearer ".count)).trimmingCharacters(in: .whitespaces)
        guard try await store.apiKeys.isValid(key) else {
            throw APIError(.unauthorized, .invalidAPIKey, "the API key is unknown or revoked")
        }
        return try await next(request, context)
    }
}
