import Hummingbird
import NIOCore
import Store
import Postback

/// Request context carrying the peer address, which receipts record, and what the request's API key allows.
struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// What the request's API key allows; set by ``RequireScope`` on the private routes.
    var grant: APIKeyGrant?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Refuses (403 `app_not_allowed`) unless the key may see `app`; a key limited to apps must name one of them.
    func requireApp(_ app: AppID?) throws {
        guard let grant, let apps = grant.apps else { return }
        let list = apps.sorted().map(String.init).joined(separator: ", ")
        guard let app else { throw APIError(.forbidden, .appNotAllowed, "this API key reads apps \(list) only; add app= with one of them") }
        guard grant.covers(app: app) else { throw APIError(.forbidden, .appNotAllowed, "this API key does not cover app \(app); it covers \(list)") }
    }

    /// Refuses (403 `app_not_allowed`) a key limited to apps: the route reads or changes what spans every app.
    func requireEveryApp(_ what: String) throws {
        guard let apps = grant?.apps else { return }
        throw APIError(.forbidden, .appNotAllowed, "\(what) spans every app; this API key covers apps \(apps.sorted().map(String.init).joined(separator: ", ")) only")
    }

    /// The peer as text (`127.0.0.1:54321`), for receipts.
    var peer: String? {
        guard let remoteAddress else { return nil }
        if let ip = remoteAddress.ipAddress, let port = remoteAddress.port { return "\(ip):\(port)" }
        return remoteAddress.description
    }
}
