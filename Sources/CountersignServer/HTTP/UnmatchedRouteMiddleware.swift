import Hummingbird

/// Answers a request no route takes with a JSON error: 405 `method_not_allowed` with `Allow` when the path has routes
/// for other methods, else 404 `not_found`. Added after every route, so it wraps only the router's not-found answer.
struct UnmatchedRouteMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Every route as path segments (`:name` or `{name}` match any one segment) and its method.
    let routes: [(segments: [Substring], method: String)]

    init(routes: [Router<Context>.RouteDescription]) {
        self.routes = routes.map { ($0.path.description.split(separator: "/"), $0.method.rawValue) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let path = request.uri.path
            let segments = path.split(separator: "/")
            let methods = Set(routes.filter { Self.matches($0.segments, segments) }.map(\.method)).sorted()
            let shown = path.count > 200 ? String(path.prefix(200)) + "…" : path
            if !methods.isEmpty {
                throw APIError(.methodNotAllowed, .methodNotAllowed, "\(request.method.rawValue) is not allowed on \(shown); use \(methods.joined(separator: " or "))",
                               headers: [.allow: methods.joined(separator: ", ")])
            }
            throw APIError(.notFound, .notFound, "no route for \(shown); the HTTP API is described in docs/openapi.yaml")
        }
    }

    static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        pattern.count == path.count && zip(pattern, path).allSatisfy { wanted, given in
            wanted.hasPrefix(":") || wanted.hasPrefix("{") || wanted == given
        }
    }
}
