import Hummingbird
import JWS
import NIOCore
import NIOHTTP1

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
        } catch is HTTPParserError {
            throw APIError(.badRequest, .malformedRequest, "the request body is not well-formed (its chunked framing or length is broken)",
                           headers: [.connection: "close"])
        }
    }
}

extension JSONValue {
    /// The value of a JSON number with no fractional part, as JSON Schema's `integer` reads it (`5` and `5.0` alike);
    /// nil for anything else or beyond ±2^53, where doubles stop being exact.
    var wholeNumber: Int64? {
        guard case .number(let text) = self else { return nil }
        if let value = Int64(text) { return abs(value) <= 1 << 53 ? value : nil }
        guard let number = Double(text), number == number.rounded(), abs(number) <= 9_007_199_254_740_992 else { return nil }
        return Int64(number)
    }
}
