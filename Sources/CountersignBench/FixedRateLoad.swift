import AsyncHTTPClient
import Foundation
import Histogram
import NIOCore
import Synchronization

/// An open-loop load at a fixed rate: request `i` is due at `start + i / rate` whatever the answers before it, and its
/// latency is measured from when it was due, not from when it could be sent. A server that stalls makes every request
/// due during the stall late, as real senders see it (coordinated omission corrected); latencies go into an
/// HdrHistogram in microseconds.
struct FixedRateLoad {
    /// What a run measured.
    struct Outcome {
        /// Latency from the intended send time, in microseconds.
        var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var sent = 0
        var ok = 0
        var other = 0
        var failed = 0
    }

    /// The server's base URL; bodies go to `/postbacks`.
    let url: String
    /// The bodies, sent in order.
    let bodies: [[UInt8]]
    /// Requests a second.
    let rate: Double
    /// How long to send.
    let seconds: Double
    /// Connections the client may open.
    let connections: Int

    /// Sends `rate * seconds` requests on schedule and waits for every answer.
    func run() async throws -> Outcome {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(
            timeout: .init(connect: .seconds(5), read: .seconds(60)),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)))
        let outcome = Tally()
        let total = min(bodies.count, Int(rate * seconds))
        let start = DispatchTime.now().uptimeNanoseconds
        let target = url.hasSuffix("/") ? url + "postbacks" : url + "/postbacks"
        await withDiscardingTaskGroup { group in
            var next = 0
            while next < total {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                let due = min(total, Int(elapsed * rate) + 1)
                while next < due {
                    let index = next
                    next += 1
                    let intended = start + UInt64(Double(index) / rate * 1e9)
                    let body = bodies[index]
                    group.addTask {
                        var request = HTTPClientRequest(url: target)
                        request.method = .POST
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(bytes: body))
                        let status: UInt?
                        do {
                            let response = try await client.execute(request, timeout: .seconds(60))
                            _ = try await response.body.collect(upTo: 1 << 20)
                            status = response.status.code
                        } catch {
                            status = nil
                        }
                        let micros = (DispatchTime.now().uptimeNanoseconds - intended) / 1_000
                        outcome.state.withLock { outcome in
                            outcome.sent += 1
                            switch status {
                            case 200?: outcome.ok += 1
                            case nil: outcome.failed += 1
                            default: outcome.other += 1
                            }
                            _ = outcome.latency.record(micros)
                        }
                    }
                }
                try? await Task.sleep(nanoseconds: 200_000)
            }
        }
        try await client.shutdown()
        return outcome.state.withLock { $0 }
    }

    /// The outcome, shared by the requests in flight.
    private final class Tally: Sendable {
        let state = Mutex(Outcome())
    }
}
