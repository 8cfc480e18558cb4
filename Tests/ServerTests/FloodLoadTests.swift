import AsyncHTTPClient
import Foundation
import Synchronization
import NIOCore
import Testing
import TestSupport
import JWS
import PostbackMint
@testable import CountersignCLI
@testable import CountersignServer

/// Issue 11's load proof, as behaviour: while four clients send 7,200-member bodies as fast as they can, every genuine
/// postback sent between them is stored and answered 200, and every wide body is refused. Latency under load is a
/// benchmark's to measure (`scripts/bench-ingest --latency`, docs/performance.md); this prints the figures it saw.
@Suite struct FloodLoadTests {
    @Test(arguments: TestEngine.allCases) func genuinePostbacksAreStoredDuringAWideBodyFlood(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        // {"0":0,"1":0,...} with 7,200 members named in base 36: 57 KB, under the 64 KiB body limit.
        let wide = ByteBuffer(bytes: Array(("{" + (0..<7_200).map { "\"\(String($0, radix: 36))\":0" }.joined(separator: ",") + "}").utf8))
        #expect(wide.readableBytes < 64 * 1024)
        let genuine = try (0..<100).map { try LiveServer.aak("flood-\($0)") }
        try await server.run(.live) { client in
            let port = try #require(client.port)
            let url = "http://127.0.0.1:\(port)/.well-known/appattribution/report-attribution/"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            // The flood runs until the genuine sender is done; each genuine postback waits for another wide body to
            // have been answered first, so the two interleave whatever the machine's speed.
            let progress = FloodProgress()
            let (floodCount, latencies, stored) = try await withThrowingTaskGroup(of: (Int, [Duration], Int).self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var sent = 0
                        var refused = 0
                        while !progress.genuineDone.load(ordering: .relaxed) {
                            var request = HTTPClientRequest(url: url)
                            request.method = .POST
                            request.body = .bytes(wide)
                            let response = try await http.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 16)
                            if response.status == .badRequest { refused += 1 }
                            sent += 1
                            progress.floodAnswered.add(1, ordering: .relaxed)
                        }
                        #expect(refused == sent, "every wide body is refused as malformed")
                        return (sent, [], 0)
                    }
                }
                group.addTask {
                    defer { progress.genuineDone.store(true, ordering: .relaxed) }
                    var latencies: [Duration] = []
                    var stored = 0
                    for (index, body) in genuine.enumerated() {
                        while progress.floodAnswered.load(ordering: .relaxed) <= index { await Task.yield() }
                        var request = HTTPClientRequest(url: url)
                        request.method = .POST
                        request.body = .bytes(body)
                        let started = ContinuousClock.now
                        let response = try await http.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 16)
                        latencies.append(ContinuousClock.now - started)
                        if response.status == .ok { stored += 1 }
                    }
                    return (0, latencies, stored)
                }
                var total = (0, [Duration](), 0)
                for try await part in group { total = (total.0 + part.0, total.1 + part.1, total.2 + part.2) }
                return total
            }
            try await http.shutdown()
            let sorted = latencies.sorted()
            print("flood: \(floodCount) wide bodies, \(latencies.count) genuine postbacks, p50 \(sorted[sorted.count / 2]), "
                + "p99 \(sorted[min(sorted.count - 1, sorted.count * 99 / 100)]) (a debug build; figures, not a goal)")
            #expect(floodCount >= genuine.count)
            #expect(latencies.count == genuine.count)
            #expect(stored == genuine.count)
            let rows = try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self)
            #expect(rows == stored)
        }
    }
}

/// What the flood test's senders share.
final class FloodProgress: Sendable {
    /// Wide bodies answered so far.
    let floodAnswered = Atomic<Int>(0)
    /// Set once every genuine postback was sent.
    let genuineDone = Atomic<Bool>(false)
}
