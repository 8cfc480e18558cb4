import Foundation
import Hummingbird
import HummingbirdCore
import JWS

/// Refuses, before any route runs, a request whose path or query holds a control character once percent-decoded (NUL
/// among them: PostgreSQL refuses it in text and SQLite would cut the text at it), or whose query has a parameter name
/// that is not plain ASCII (`api%5Fkey` must not pass for something else), or that gives a parameter twice (a check
/// must never read one value and the query another). The answer is 400 `bad_parameter` on both engines alike, and the
/// refusal is logged.
struct RequestTextMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let problem = Self.problem(request.uri) {
            context.logger.notice("request refused: control characters or an encoded parameter name", metadata: ["problem": "\(problem)"])
            throw APIError(.badRequest, .badParameter, problem)
        }
        return try await next(request, context)
    }

    /// What is wrong with `uri`, or nil.
    static func problem(_ uri: URI) -> String? {
        let path = uri.path.removingPercentEncoding ?? uri.path
        if JSONText.hasControlCharacter(path) { return "the path holds a control character; send printable text" }
        var seen = Set<Substring>()
        for (name, value) in uri.queryParameters {
            guard seen.insert(name).inserted else { return "\(name): given twice; give each parameter once" }
            guard name.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "%") }) else {
                return "parameter names are plain ASCII letters, digits and _ (not percent-encoded)"
            }
            if JSONText.hasControlCharacter(value) { return "\(name): control characters are not allowed" }
        }
        return nil
    }
}
