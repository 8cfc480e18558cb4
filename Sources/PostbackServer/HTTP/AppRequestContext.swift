import Hummingbird
import NIOCore

/// Request context carrying the peer address, which receipts record.
struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The peer as text (`127.0.0.1:54321`), for receipts.
    var peer: String? {
        guard let remoteAddress else { return nil }
        if let ip = remoteAddress.ipAddress, let port = remoteAddress.port { return "\(ip):\(port)" }
        return remoteAddress.description
    }
}
