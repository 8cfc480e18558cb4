import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Gives the answer to a request the HTTP parser could not read (a bad request line, bad header bytes, a broken
/// chunked body) the JSON body every other error has: Hummingbird answers such a request itself, before any route or
/// middleware, with an empty 400 and closes the connection. This handler sees the parser's error pass and fills in
/// `{"error": "malformed_request", ...}` on that answer. It also answers CONNECT itself (405), which the parser would
/// otherwise take as the start of a tunnel.
final class MalformedRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var parserFailed = false
    private var replacing = false
    /// A CONNECT request was answered here; the rest of the connection is not read.
    private var refused = false

    /// The body sent instead of nothing.
    static let body = #"{"error":"malformed_request","message":"the request is not well-formed HTTP/1.1; check the request line, the headers and the body's framing"}"#
    /// The answer to CONNECT, which asks for a tunnel: the HTTP parser reads nothing after it, so it is answered here
    /// and the connection closed.
    static let connectBody = #"{"error":"method_not_allowed","message":"CONNECT is not served here; send the request itself"}"#

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if case .head(let head) = unwrapInboundIn(data), head.method == .connect {
            refused = true
            let fields: HTTPFields = [.contentType: "application/json", .contentLength: String(Self.connectBody.utf8.count), .connection: "close"]
            context.write(wrapOutboundOut(.head(HTTPResponse(status: .methodNotAllowed, headerFields: fields))), promise: nil)
            context.write(wrapOutboundOut(.body(ByteBuffer(string: Self.connectBody))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        context.fireChannelRead(data)
    }

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
