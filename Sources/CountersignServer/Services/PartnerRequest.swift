import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Store

/// One POST of a delivery to its partner (or an alert to its webhook) and what came back: the single way a body leaves
/// Countersign, used by the forwarder, test deliveries and the alert sender alike.
enum PartnerRequest {
    /// What the partner answered.
    struct Answer: Sendable {
        /// The HTTP status, or nil when no answer came.
        let status: Int?
        /// The answer as metrics label it: the status code, `timeout`, `refused` or `network`.
        let label: String
        /// What went wrong, or nil for a 2xx answer.
        let failure: String?
        /// The partner's `Retry-After`, when it sent one with a failure.
        let retryAfter: TimeInterval?
        /// The start of the partner's body (test deliveries only; at most ``shownBytes``).
        let body: [UInt8]
    }

    /// How much of a partner's answer a test delivery shows.
    static let shownBytes = 4096

    /// The client test deliveries use (the forwarder runs its own): redirects are never followed, as for deliveries.
    static let testClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// The headers `delivery` is sent with; `shown` puts `(secret)` in place of the partner's secret.
    static func headers(_ delivery: some WebhookDelivery, test: Bool, shown: Bool = false) -> [(name: String, value: String)] {
        var headers = [("Content-Type", "application/json"), ("Idempotency-Key", delivery.idempotencyKey),
                       ("Countersign-Attempt", String(delivery.attempts + 1)), ("User-Agent", "countersign/\(CountersignVersion.current)")]
        if test { headers.append(("Countersign-Test", "true")) }
        if let header = delivery.header { headers.append((header.name, shown ? "(secret)" : header.value)) }
        return headers
    }

    /// POSTs `delivery` within its timeout; `test` marks it with `Countersign-Test: true` and keeps the start of the answer.
    static func send(_ delivery: some WebhookDelivery, client: HTTPClient, test: Bool = false) async -> Answer {
        var request = HTTPClientRequest(url: delivery.url)
        request.method = .POST
        for (name, value) in headers(delivery, test: test) { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: delivery.body))
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(delivery.timeout * 1000)))
            var body: [UInt8] = []
            if test {
                for try await chunk in response.body {
                    body += chunk.readableBytesView.prefix(shownBytes - body.count)
                    if body.count >= shownBytes { break }
                }
            }
            let code = Int(response.status.code)
            guard (200..<300).contains(code) else {
                return Answer(status: code, label: String(code), failure: "HTTP \(code) \(response.status.reasonPhrase)",
                              retryAfter: ForwardingSchedule.retryAfter(response.headers.first(name: "Retry-After"), now: Date()), body: body)
            }
            return Answer(status: code, label: String(code), failure: nil, retryAfter: nil, body: body)
        } catch {
            let (label, failure) = describe(error)
            return Answer(status: nil, label: label, failure: failure, retryAfter: nil, body: [])
        }
    }

    /// A failed request's answer label (`timeout`, `refused` or `network`) and description, by the error's type.
    static func describe(_ error: any Error) -> (answer: String, failure: String) {
        if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return ("timeout", "no answer within the rule's timeout")
        }
        if case .connectTimeout? = error as? ChannelError { return ("timeout", "no answer within the rule's timeout") }
        if isRefused(error) { return ("refused", "connection refused") }
        return ("network", String(describing: error))
    }

    /// Whether the partner's host refused the connection: an `ECONNREFUSED` from the socket, alone or among the
    /// attempts of a connection to several addresses.
    private static func isRefused(_ error: any Error) -> Bool {
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        if let error = error as? NIOConnectionError { return error.connectionErrors.contains { isRefused($0.error) } }
        return false
    }
}
