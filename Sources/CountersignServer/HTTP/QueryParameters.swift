import Hummingbird
import Postback

/// Query parameters the read routes share, each refused with a 400 `bad_parameter` that names it.
enum QueryParameters {
    /// The most rows one page holds.
    static let maximumPage = 10_000

    /// Refuses any parameter not in `allowed`.
    static func refuseUnknown(_ request: Request, allowed: Set<String>) throws {
        for name in request.uri.queryParameters.map({ String($0.key) }) where !allowed.contains(name) {
            throw APIError(.badRequest, .badParameter, "\(name): unknown parameter")
        }
    }

    /// The output format: `format=` wins, then the Accept header, then JSON.
    static func format(_ request: Request) throws -> ReportFormat {
        guard let format = ReportFormat.negotiate(parameter: request.uri.queryParameters.get("format"), accept: request.headers[.accept]) else {
            throw APIError(.badRequest, .badParameter, "format: must be json, csv or ndjson")
        }
        return format
    }

    /// `limit` (or `name`): 1 to `maximum` rows, `defaultLimit` when absent.
    static func limit(_ request: Request, default defaultLimit: Int, name: String = "limit", maximum: Int = maximumPage) throws -> Int {
        guard let limit = Int(request.uri.queryParameters.get(name) ?? String(defaultLimit)), (1...maximum).contains(limit) else {
            throw APIError(.badRequest, .badParameter, "\(name): must be 1 to \(maximum)")
        }
        return limit
    }

    /// A `true`/`false` parameter, false when absent.
    static func flag(_ request: Request, _ name: String) throws -> Bool {
        guard let value = request.uri.queryParameters.get(name) else { return false }
        guard let flag = ["true": true, "false": false, "1": true, "0": false][value] else {
            throw APIError(.badRequest, .badParameter, "\(name): must be true or false")
        }
        return flag
    }

    /// `app`: the App Store id a query names, nil when absent, 400 `bad_app` when it is not one.
    static func app(_ request: Request) throws -> AppID? {
        guard let text = request.uri.queryParameters.get("app") else { return nil }
        guard let app = AppID(text) else { throw APIError(.badRequest, .badApp, "app: must be the numeric App Store id, such as 1108187390") }
        return app
    }

    /// The `{app}` of the matched path, refused with 400 `bad_app` when it is not an App Store id and 403 when the
    /// caller's key does not cover it; `example` shows the route with an id in the message.
    static func pathApp(_ context: AppRequestContext, example: String) throws -> AppID {
        guard let app = context.parameters.get("app").flatMap(AppID.init) else {
            throw APIError(.badRequest, .badApp, "the app is the numeric App Store id, such as \(example)")
        }
        try context.requireApp(app)
        return app
    }

    /// `after` (or `name`): the id cursor of a paged listing, 0 when absent; `what` names the id in the message.
    static func after(_ request: Request, what: String, name: String = "after") throws -> Int64 {
        guard let after = Int64(request.uri.queryParameters.get(name) ?? "0"), after >= 0 else {
            throw APIError(.badRequest, .badParameter, "\(name): must be a \(what) id")
        }
        return after
    }
}
