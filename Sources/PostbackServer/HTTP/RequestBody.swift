import Hummingbird
import NIOCore

/// Reads a request body up to a limit: a declared `Content-Length` above it is refused before a byte is read, and the
/// connection is closed after the 413 so the rest is never read either.
enum RequestBody {
    /// The body's bytes, or 413 `payload_too_large`.
    static func collect(_ request: Request, limit: Int) async throws -> ByteBuffer {
        if let declared = request.headers[.contentLength], let length = Int(declared), length > limit {
            throw APIError.tooLarge(limit: limit)
        }
        do {
            return try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(limit: limit)
        }
    }
}
