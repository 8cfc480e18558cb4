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
            throw malformed
        }
    }

    /// Hands the body to `take` a buffer at a time as it arrives, keeping none of it: the same 413 (a declared length
    /// over `limit` before a byte is read, or more than `limit` bytes arriving) and 400 as ``collect(_:limit:)``.
    static func stream(_ request: Request, limit: Int, _ take: (ByteBuffer) throws -> Void) async throws {
        if let declared = request.headers[.contentLength], let length = Int(declared), length > limit {
            throw APIError.tooLarge(limit: limit)
        }
        var received = 0
        do {
            for try await buffer in request.body {
                received += buffer.readableBytes
                guard received <= limit else { throw APIError.tooLarge(limit: limit) }
                try take(buffer)
            }
        } catch is HTTPParserError {
            throw malformed
        }
    }

    /// 400 for a body whose framing the HTTP parser cannot read; the connection closes after it.
    private static var malformed: APIError {
        APIError(.badRequest, .malformedRequest, "the request body is not well-formed (its chunked framing or length is broken)",
                 headers: [.connection: "close"])
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
