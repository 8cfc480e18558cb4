import Hummingbird
import Store

/// Guards `GET /v1/schemas/{app}/published`: anyone may read it when the app's registry entry says `public_schema`;
/// otherwise it needs a key with the encoder scope (read includes it) that covers the app. Decided after the route
/// matched, by the app in its path.
struct PublishedSchemaAccess: RouterMiddleware {
    typealias Context = AppRequestContext
    let store: StoreDatabase

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A path whose app does not parse is no public schema: it needs a key like any other, and the route answers 400.
        let app = try? QueryParameters.pathApp(context, example: "/v1/schemas/1108187390/published")
        if let app, try await store.apps.hasPublicSchema(app: app) { return try await next(request, context) }
        var context = context
        let grant = try await RequireScope.authorize(request, store: store, scope: .encoder)
        if let app, !grant.covers(app: app) { throw APIError(.forbidden, .appNotAllowed, "this API key is limited to other apps") }
        context.grant = grant
        return try await next(request, context)
    }
}
