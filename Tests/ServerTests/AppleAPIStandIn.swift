import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing
import TestSupport

/// A stand-in for Apple's AdServices attribution API: a real HTTP server on loopback whose answers are scripted per
/// token, and which records every call it gets.
final class AppleAPIStandIn: Sendable {
    /// One scripted answer: wait `hold` seconds, then answer `status` with `body`.
    struct Answer: Sendable {
        var status: Int
        var body = ""
        var hold: TimeInterval = 0

        static func ok(_ body: String) -> Answer { Answer(status: 200, body: body) }
        static func status(_ status: Int) -> Answer { Answer(status: status) }
    }

    /// A call as Apple's server would see it.
    struct Call: Sendable {
        let token: String
        let contentType: String?
        let method: String
        let path: String
        let at: Date
    }

    /// Answers per token, used in order; the last one repeats. Unknown tokens get 400.
    let script: [String: [Answer]]
    private let calls = Mutex<[Call]>([])

    init(_ script: [String: [Answer]]) {
        self.script = script
    }

    /// The calls made for `token`, in order.
    func calls(for token: String) -> [Call] {
        calls.withLock { $0.filter { $0.token == token } }
    }

    /// Seconds between consecutive calls for `token`.
    func gaps(for token: String) -> [TimeInterval] {
        let times = calls(for: token).map(\.at)
        return zip(times.dropFirst(), times).map { $0.timeIntervalSince($1) }
    }

    /// Runs the stand-in on a free loopback port and gives `body` its API URL (`http://127.0.0.1:PORT/api/v1/`).
    func serve(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("/api/v1") { request, _ -> Response in
            let token = String(buffer: try await request.body.collect(upTo: 1 << 16))
            let answer: Answer = self.calls.withLock { calls in
                let made = calls.filter { $0.token == token }.count
                calls.append(Call(token: token, contentType: request.headers[.contentType], method: request.method.rawValue,
                                  path: request.uri.path, at: Date()))
                guard let answers = self.script[token], !answers.isEmpty else { return .status(400) }
                return answers[min(made, answers.count - 1)]
            }
            if answer.hold > 0 { try await Task.sleep(for: .seconds(answer.hold)) }
            return Response(status: .init(code: answer.status), headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        try await Self.serveOnLoopback(router, label: "apple-stand-in") { base in try await body(base + "/api/v1/") }
    }

    /// Runs `router` on a free loopback port and gives `body` its base URL (`http://127.0.0.1:PORT`).
    static func serveOnLoopback(_ router: Router<BasicRequestContext>, label: String, _ body: @escaping @Sendable (String) async throws -> Void) async throws {
        var logger = Logger(label: label)
        logger.logLevel = .warning
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            try await body("http://127.0.0.1:\(port)")
        }
    }
}
