import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request is not complete within ``timeout`` of its head, so a client that sends headers
/// and then a byte now and then cannot hold a connection (and a file descriptor) for long; and closes a connection
/// once a response that says `Connection: close` is written, so an oversized upload refused by its declared length is
/// never read. Hummingbird's own idle timeout restarts on every byte read, which is why this deadline exists.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How long one request may take to arrive, from its head to its end.
    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var closeAfterResponse = false

    /// A handler for one connection.
    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closeAfterResponse = true }
        case .end where closeAfterResponse:
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }
}
