import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A partner for the forwarding benchmark: answers every request 200 with an empty body, keeping the connection, on
/// one event-loop thread, so the partner's own speed never holds the receiver back (a receiver kept waiting spends more
/// CPU a postback, and Python's servers were slower with larger bodies than the receiver).
struct PartnerSink {
    /// Listens on an ephemeral loopback port, prints it, and serves until the process is ended.
    func run() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Answer())
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        FileHandle.standardOutput.write(Data("\(channel.localAddress?.port ?? 0)\n".utf8))
        try channel.closeFuture.wait()
    }

    /// 200 with no body for each request, once its body has arrived.
    private final class Answer: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "0"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
