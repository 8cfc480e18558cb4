import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Gives the answer to a request the HTTP parser could not read (a bad request line, bad header bytes, a broken
/// chunked body) the JSON body every other error has: Hummingbird answers such a request itself, before any route or
/// middleware, with an empty 400 and closes the connection. This handler sees the parser's error pass and fills in
/// `{"error": "malformed_request", ...}` on that answer.
final class MalformedRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var parserFailed = false
    private var replacing = false

    /// The body sent instead of nothing.
    static let body = #"{"error":"malformed_request","message":"the request is not well-formed HTTP/1.1; check the request line, the headers and the body's framing"}"#

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError { parserFailed = true }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where parserFailed && head.status == .badRequest && head.headerFields[.contentLength] == "0":
            parserFailed = false
            replacing = true
            head.headerFields[.contentLength] = String(Self.body.utf8.count)
            head.headerFields[.contentType] = "application/json"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where replacing:
            replacing = false
            context.write(wrapOutboundOut(.body(ByteBuffer(string: Self.body))), promise: nil)
            context.write(data, promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }
}
