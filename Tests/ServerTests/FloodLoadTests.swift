import AsyncHTTPClient
import Foundation
import GRDB
import NIOCore
import Testing
import JWS
import PostbackMint
@testable import CountersignCLI
@testable import CountersignServer

/// Issue 11's load proof: while one client sends 7,200-member bodies as fast as it can for 10 s, genuine postbacks are
/// still stored, and 99 % of them are answered within 100 ms. Bounded in time, on loopback only.
@Suite struct FloodLoadTests {
    @Test func genuinePostbacksAreStoredPromptlyDuringAWideBodyFlood() async throws {
        let server = LiveServer()
        // {"0":0,"1":0,...} with 7,200 members named in base 36: 57 KB, under the 64 KiB body limit.
        let wide = ByteBuffer(bytes: Array(("{" + (0..<7_200).map { "\"\(String($0, radix: 36))\":0" }.joined(separator: ",") + "}").utf8))
        #expect(wide.readableBytes < 64 * 1024)
        let genuine = try (0..<2_000).map { try LiveServer.aak("flood-\($0)") }
        try await server.run { client in
            let port = try #require(client.port)
            let url = "http://127.0.0.1:\(port)/.well-known/appattribution/report-attribution/"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let deadline = ContinuousClock.now + .seconds(10)
            let (floodCount, latencies, stored) = try await withThrowingTaskGroup(of: (Int, [Duration], Int).self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var sent = 0
                        var refused = 0
                        while ContinuousClock.now < deadline {
                            var request = HTTPClientRequest(url: url)
                            request.method = .POST
                            request.body = .bytes(wide)
                            let response = try await http.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 16)
                            if response.status == .badRequest { refused += 1 }
                            sent += 1
                        }
                        #expect(refused == sent, "every wide body is refused as malformed")
                        return (sent, [], 0)
                    }
                }
                group.addTask {
                    var latencies: [Duration] = []
                    var stored = 0
                    for body in genuine where ContinuousClock.now < deadline {
                        var request = HTTPClientRequest(url: url)
                        request.method = .POST
                        request.body = .bytes(body)
                        let started = ContinuousClock.now
                        let response = try await http.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 16)
                        latencies.append(ContinuousClock.now - started)
                        if response.status == .ok { stored += 1 }
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    return (0, latencies, stored)
                }
                var total = (0, [Duration](), 0)
                for try await part in group { total = (total.0 + part.0, total.1 + part.1, total.2 + part.2) }
                return total
            }
            try await http.shutdown()
            let sorted = latencies.sorted()
            let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            let p50 = sorted[sorted.count / 2]
            print("flood: \(floodCount) wide bodies, \(latencies.count) genuine postbacks, p50 \(p50), p99 \(p99)")
            #expect(floodCount > 100)
            #expect(latencies.count > 100)
            #expect(stored == latencies.count)
            #expect(p99 < .milliseconds(100))
            let rows = try server.query { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM postbacks") }
            #expect(rows == stored)
        }
    }
}
