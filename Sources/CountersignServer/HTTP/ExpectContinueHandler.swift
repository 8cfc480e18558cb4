import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers `Expect: 100-continue` with `100 Continue` as soon as the request head arrives. A client that asks before
/// sending its body (curl does for every upload over 1 KiB: spend files, identifier lists, schemas) otherwise waits a
/// second for an answer that never comes; Hummingbird sends none itself. The body is still read, limited and refused by
/// the route as any other; the expectation is taken off the head the application sees.
final class ExpectContinueHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data), let expectation = head.headerFields[.expect] else {
            context.fireChannelRead(data)
            return
        }
        if expectation.lowercased() == "100-continue" {
            head.headerFields[.expect] = nil
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }
}
