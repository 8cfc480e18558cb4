import Hummingbird
import Logging

/// The last word on an error no route answered itself (a storage failure, a bug): a JSON 500 with a stable code and one
/// log line at error level, never Hummingbird's empty 500 with a debug line. Errors that already carry their answer
/// (``APIError`` and Hummingbird's own) pass through unchanged.
struct ErrorAnswerMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            throw error
        } catch is CancellationError {
            throw APIError(.serviceUnavailable, .shuttingDown, "the request was cancelled; retry later")
        } catch {
            context.logger.error("request failed", metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "error": "\(String(reflecting: error))",
            ])
            throw APIError(.internalServerError, .internalError, "the server could not complete the request; retry later")
        }
    }
}
