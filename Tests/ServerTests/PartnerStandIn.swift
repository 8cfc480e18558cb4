import Foundation
import Glibc
import Hummingbird
import NIOCore
import Synchronization

/// Partners that receive forwarded postbacks: a real HTTP server on loopback with one scripted behaviour per path,
/// recording every request as it arrives (before any hold), and how many were in flight at once per path.
final class PartnerStandIn: Sendable {
    /// How a path answers.
    enum Behaviour: Sendable {
        /// 200 at once.
        case accept
        /// `status` to the first `count` requests for each idempotency key, then 200.
        case failFirst(Int, status: Int)
        /// Holds the first request for each idempotency key `seconds` (longer than the rule's timeout), then 200 at once.
        case holdFirst(TimeInterval)
        /// Holds every request `seconds`, then 200.
        case slow(TimeInterval)
        /// 503 with `Retry-After: 0` until ``bringUp(_:)``, then 200.
        case down
        /// 200 with every request header echoed in the body, as some partners' debugging endpoints do.
        case echo
    }

    /// A request as the partner saw it.
    struct Arrival: Sendable {
        let path: String
        let idempotencyKey: String
        let attempt: Int
        let contentType: String?
        /// Every header, by lowercased name.
        let headers: [String: String]
        let body: [UInt8]
        let at: Date
        /// The status answered (nil while held or when the answer never left).
        var answered: Int?
    }

    private struct State {
        var arrivals: [Arrival] = []
        var inFlight: [String: Int] = [:]
        var mostInFlight: [String: Int] = [:]
        var up: Set<String> = []
    }

    let behaviours: [String: Behaviour]
    private let state = Mutex(State())

    init(_ behaviours: [String: Behaviour]) {
        self.behaviours = behaviours
    }

    /// Every arrival at `path`, in order.
    func arrivals(_ path: String) -> [Arrival] {
        state.withLock { $0.arrivals.filter { $0.path == path } }
    }

    /// The idempotency keys `path` answered 200.
    func accepted(_ path: String) -> Set<String> {
        Set(arrivals(path).filter { $0.answered == 200 }.map(\.idempotencyKey))
    }

    /// The most requests `path` had in flight at once, and how many it has now.
    func mostInFlight(_ path: String) -> Int { state.withLock { $0.mostInFlight[path] ?? 0 } }
    func inFlight(_ path: String) -> Int { state.withLock { $0.inFlight[path] ?? 0 } }

    /// A `.down` path answers 200 from now on.
    func bringUp(_ path: String) {
        _ = state.withLock { $0.up.insert(path) }
    }

    /// Runs the partners on a free loopback port and gives `body` the base URL (`http://127.0.0.1:PORT`).
    func serve(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("/:path") { request, context -> Response in
            let path = context.parameters.get("path") ?? ""
            let bytes = Array(buffer: try await request.body.collect(upTo: 1 << 20))
            func header(_ name: String) -> String? { request.headers.first { $0.name.canonicalName == name }?.value }
            let key = header("idempotency-key") ?? ""
            let (index, before) = self.state.withLock { state in
                let before = state.arrivals.filter { $0.path == path && $0.idempotencyKey == key }.count
                state.arrivals.append(Arrival(path: path, idempotencyKey: key, attempt: Int(header("countersign-attempt") ?? "") ?? 0,
                                              contentType: request.headers[.contentType],
                                              headers: Dictionary(request.headers.map { ($0.name.canonicalName, $0.value) }, uniquingKeysWith: { $1 }),
                                              body: bytes, at: Date()))
                state.inFlight[path, default: 0] += 1
                state.mostInFlight[path] = max(state.mostInFlight[path] ?? 0, state.inFlight[path]!)
                return (state.arrivals.count - 1, before)
            }
            defer { self.state.withLock { $0.inFlight[path, default: 1] -= 1 } }
            var status = 200
            var headers: HTTPFields = [:]
            var answer = ""
            switch self.behaviours[path] ?? .accept {
            case .accept: break
            case .failFirst(let count, let failure): if before < count { status = failure }
            case .holdFirst(let seconds): if before == 0 { try await Task.sleep(for: .seconds(seconds)) }
            case .slow(let seconds): try await Task.sleep(for: .seconds(seconds))
            case .down:
                if !self.state.withLock({ $0.up.contains(path) }) {
                    status = 503
                    headers[.retryAfter] = "0"
                }
            case .echo: answer = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
            }
            self.state.withLock { $0.arrivals[index].answered = status }
            return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: answer)))
        }
        try await AppleAPIStandIn.serveOnLoopback(router, label: "partner-stand-in", body)
    }

    /// A loopback URL where nothing listens: connections are refused.
    static func refusingURL() throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        // Bound but never listening, and closed at once: the port is free, and nothing accepts on it.
        return "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/refused"
    }
}
