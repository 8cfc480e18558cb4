import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import Logging
import NIOCore
import NIOEmbedded
@testable import Store
import Synchronization
import Testing
import TestSupport
@testable import CountersignServer

/// Stalled readers and heavy answers (trust round 4, finding 10): a connection whose output stays full is closed, each
/// API key runs at most a few exports at once and the server a few in all, and memory freed by heavy requests is given
/// back to the system once they have finished.
@Suite struct SlowReaderTests {
    /// A connection's channel with the handler, active as one the server accepted.
    static func connection(timeout: TimeAmount) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: SendTimeoutHandler(timeout: timeout))
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 8080), promise: nil)
        return channel
    }

    /// Sets the channel's writability as NIO does when its queue passes the water marks, and tells the pipeline.
    static func setWritable(_ writable: Bool, _ channel: EmbeddedChannel) {
        channel.isWritable = writable
        channel.pipeline.fireChannelWritabilityChanged()
    }

    @Test func aConnectionWhoseOutputStaysFullIsClosedAfterTheSendTimeout() throws {
        let channel = try Self.connection(timeout: .seconds(30))
        #expect(channel.isActive)
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(channel.isActive, "not yet")
        // A second notice that it is still full does not restart the wait.
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive, "closed 30 s after the output stopped")
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test func aConnectionWhoseClientReadsAgainStaysOpen() throws {
        let channel = try Self.connection(timeout: .seconds(30))
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        Self.setWritable(true, channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive, "the client read: the wait was cancelled")
        // Full again: the wait starts afresh from now.
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(11))
        #expect(!channel.isActive)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    /// A large answer written as one buffer keeps the output full for long; bytes leaving are progress.
    @Test func aFullOutputThatStillDrainsStaysOpenUntilItStopsMoving() throws {
        let channel = try Self.connection(timeout: .seconds(30))
        channel.write(ByteBuffer(string: String(repeating: "x", count: 1000)), promise: nil)
        Self.setWritable(false, channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        // The bytes leave for the socket; the output stays full (more waits behind them).
        channel.flush()
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive, "bytes left 29 s ago")
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive, "nothing has left for 30 s")
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test func aKeyRunsAtMostPerKeyAndTheServerAtMostTotal() throws {
        let limiter = HeavyRequestLimiter(kind: "export", perKey: 2, total: 3)
        let first = try limiter.acquire(key: "a"), second = try limiter.acquire(key: "a")
        #expect(limiter.inFlight == 2)

        let perKey = #expect(throws: APIError.self) { try limiter.acquire(key: "a") }
        #expect(perKey?.status == .tooManyRequests)
        #expect(perKey?.code == "too_many_requests")
        #expect(perKey?.headers[.retryAfter] == String(HeavyRequestLimiter.retryAfter))
        #expect(limiter.inFlight == 2, "a refusal holds nothing")

        let other = try limiter.acquire(key: "b")
        let total = #expect(throws: APIError.self) { try limiter.acquire(key: "c") }
        #expect(total?.status == .serviceUnavailable)
        #expect(total?.code == "server_busy")
        #expect(total?.headers[.retryAfter] == String(HeavyRequestLimiter.retryAfter))

        // Releasing twice releases once.
        first.release()
        first.release()
        #expect(limiter.inFlight == 2)
        let again = try limiter.acquire(key: "a")
        #expect(limiter.inFlight == 3)
        for permit in [second, other, again] { permit.release() }
        #expect(limiter.inFlight == 0)
        #expect(limiter.finished == 4)
    }

    @Test func aPermitIsReleasedWhenItIsFreed() throws {
        let limiter = HeavyRequestLimiter(kind: "export", perKey: 1, total: 1)
        do {
            let permit = try limiter.acquire(key: "a")
            withExtendedLifetime(permit) { #expect(limiter.inFlight == 1) }
        }
        #expect(limiter.inFlight == 0)
        let permit = try limiter.acquire(key: "a")
        #expect(limiter.inFlight == 1, "the key may run one again")
        permit.release()
    }

    /// Two keys may share a name: each is counted by its id.
    @Test func keysAreCountedByIdNotByName() {
        let first = APIKeyGrant(scopes: [.read], apps: nil, name: "dashboard", id: 1)
        let second = APIKeyGrant(scopes: [.read], apps: nil, name: "dashboard", id: 2)
        #expect(HeavyRequestLimiter.key(for: first) != HeavyRequestLimiter.key(for: second))
        #expect(HeavyRequestLimiter.key(for: first) == HeavyRequestLimiter.key(apiKeyID: 1))
    }

    @Test func anExportIsWrittenInBuffersOf64KiBAtMost() {
        #expect(ReportRoutes.exportChunks(count: 0).isEmpty)
        #expect(ReportRoutes.exportChunks(count: 10) == [0..<10])
        let ranges = ReportRoutes.exportChunks(count: 150_000)
        #expect(ranges.map(\.count) == [65_536, 65_536, 18_928])
        #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == 150_000)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
    }

    /// While two exports of a key run, its third is refused with 429; another key (of the same name) still gets its
    /// export until the server runs its total, then 503; each running export holds a permit until it is written.
    @Test(arguments: TestEngine.allCases) func aThirdConcurrentExportFromOneKeyIsRefused(engine: TestEngine) async throws {
        var server = LiveServer(engine: engine)
        let export = HeavyRequestLimiter(kind: "export", perKey: 2, total: 3)
        server.limits = ServerLimits(export: export, report: HeavyRequestLimiter(kind: "report", perKey: 4, total: 8),
                                     reconcile: HeavyRequestLimiter(kind: "reconcile", perKey: 1, total: 2))
        let store = try server.store()
        let (busy, busyKey) = try await store.apiKeys.create(name: "exporter")
        let otherKey = try await store.apiKeys.create(name: "exporter").key
        store.close()
        // The two exports the key runs: held here, as a client that reads slowly holds them.
        let running = try (0..<2).map { _ in try export.acquire(key: HeavyRequestLimiter.key(apiKeyID: busy.id)) }
        try await server.run { client in
            let third = try await client.execute(uri: "/v1/conversions/export", method: .get, headers: [.authorization: "Bearer \(busyKey)"])
            #expect(third.status == .tooManyRequests)
            #expect(third.json?["error"] == .string("too_many_requests"))
            #expect(third.headers[.retryAfter] == String(HeavyRequestLimiter.retryAfter))

            let other = try await client.execute(uri: "/v1/conversions/export", method: .get, headers: [.authorization: "Bearer \(otherKey)"])
            #expect(other.status == .ok, "another key with the same name is counted apart")
            #expect(String(buffer: other.body).hasPrefix("id,received_at,"))
            #expect(export.inFlight == 2, "the finished export gave its permit back")

            let filler = try export.acquire(key: "someone else")
            let busyServer = try await client.execute(uri: "/v1/conversions/export", method: .get, headers: [.authorization: "Bearer \(otherKey)"])
            #expect(busyServer.status == .serviceUnavailable)
            #expect(busyServer.json?["error"] == .string("server_busy"))
            #expect(busyServer.headers[.retryAfter] == String(HeavyRequestLimiter.retryAfter))
            filler.release()

            running[0].release()
            let afterOne = try await client.execute(uri: "/v1/conversions/export?format=ndjson", method: .get, headers: [.authorization: "Bearer \(busyKey)"])
            #expect(afterOne.status == .ok, "one of the key's exports has finished")
            // An answer never written (HEAD) gives its permit back too.
            let head = try await client.execute(uri: "/v1/conversions/export", method: .head, headers: [.authorization: "Bearer \(busyKey)"])
            #expect(head.status == .ok)
            running[1].release()
            #expect(export.inFlight == 0)
        }
    }

    /// Counts the trims a ``MemoryTrimmer`` asks for.
    final class TrimCount: Sendable {
        private let count = Mutex(0)
        func trim() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test func memoryIsTrimmedOnceAfterHeavyRequestsFinishAndNeverWhileOneRuns() async throws {
        let trims = TrimCount()
        let limiter = HeavyRequestLimiter(kind: "export", perKey: 2, total: 4)
        let trimmer = MemoryTrimmer(limiters: [limiter], logger: Logger(label: "test")) { trims.trim() }
        #expect(await trimmer.round() == false, "nothing has finished")

        let first = try limiter.acquire(key: "a")
        let second = try limiter.acquire(key: "b")
        first.release()
        #expect(await trimmer.round() == false, "one still runs")
        #expect(trims.value == 0)
        second.release()
        #expect(await trimmer.round() == true)
        #expect(trims.value == 1)
        #expect(await trimmer.round() == false, "nothing new has finished")
        #expect(trims.value == 1)

        try limiter.acquire(key: "a").release()
        #expect(await trimmer.round() == true)
        #expect(trims.value == 2)
    }

    @Test func theTrimmerServiceTrimsOnItsOwnAndStopsWhenCancelled() async throws {
        let trims = TrimCount()
        let limiter = HeavyRequestLimiter(kind: "report", perKey: 1, total: 1)
        let trimmer = MemoryTrimmer(limiters: [limiter], interval: .milliseconds(20), logger: Logger(label: "test")) { trims.trim() }
        let service = Task { try await trimmer.run() }
        try limiter.acquire(key: "a").release()
        let deadline = ContinuousClock.now + .seconds(10)
        while trims.value == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(trims.value == 1)
        service.cancel()
        try await service.value
    }
}
