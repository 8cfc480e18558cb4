import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import Postback
import PostbackMint
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// A `countersign serve` process of the built binary, for tests where the process matters (SIGKILL, several receivers).
final class ReceiverProcess: @unchecked Sendable {
    let process = Process()
    private let output = OutputBuffer()
    private(set) var url = ""

    /// Everything the receiver printed so far, its log included.
    var printed: String { output.text }

    /// Starts a receiver on a free port and waits until it listens; it logs at `logLevel`.
    init(database: String, extraArguments: [String] = [], logLevel: String = "critical") throws {
        process.executableURL = URL(fileURLWithPath: Checkout.binary)
        process.arguments = ["serve", "--port", "0", "--database", database, "--keys-dir", Checkout.keys, "--log-level", logLevel] + extraArguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        // At the end of the stream the handler is called again and again with nothing: it stops itself there, or it
        // spins a core for as long as the test runs.
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil } else { output.append(data) }
        }
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let line = output.text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                url = String(line.dropFirst("listening on ".count))
                return
            }
            guard process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw KeyError("receiver did not start")
    }

    /// Sends `signal` and waits for the process to end (a receiver that does not stop within `seconds` fails the test).
    func stop(_ signal: Int32 = SIGTERM, within seconds: TimeInterval = 60) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        process.waitUntilExit(within: seconds, "countersign serve at \(url)")
    }

    deinit { stop(SIGKILL) }
}

/// What a process printed so far.
final class OutputBuffer: @unchecked Sendable {
    private var data = Data()
    private let lock = NSLock()

    func append(_ more: Data) { lock.withLock { data.append(more) } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}

/// Several receivers on one PostgreSQL database (issue 12): racing copies count once, the first verified copy counts,
/// a receiver that dies loses nothing it acknowledged, PostgreSQL restarts are survived, and tokens are exchanged once.
@Suite struct MultiReceiverTests {
    /// Runs `body` with clients of `count` receivers in this process, each with its own store, writer and runner, all on
    /// the PostgreSQL database `database`.
    static func receivers(_ count: Int, database: String, configure: @escaping @Sendable (inout LiveServer) -> Void = { _ in },
                          _ body: @escaping @Sendable ([any TestClientProtocol]) async throws -> Void) async throws {
        @Sendable func nest(_ clients: [any TestClientProtocol]) async throws {
            guard clients.count < count else { return try await body(clients) }
            var server = LiveServer(engine: .postgres)
            server.settings.database = database
            configure(&server)
            try await server.run { client in try await nest(clients + [client]) }
        }
        try await nest([])
    }

    static func store(_ database: String) throws -> StoreDatabase {
        try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
    }

    @Test func racingCopiesAcrossReceiversCountOnceAndTheFirstVerifiedCopyCounts() async throws {
        let database = try TestEngine.postgres.freshDatabase()
        let stranger = try ECPrivateKey.generate()
        let count = 30
        // Per postback: the genuine copy to all three receivers at once, a replay (an unsigned field changed) to one, and a
        // forgery under a kid nobody knows to another, all in flight together.
        var requests: [(receiver: Int, body: ByteBuffer)] = []
        for index in 0..<count {
            let genuine = try LiveServer.aak("race-\(index)")
            requests += (0..<3).map { ($0, genuine) }
            requests.append((index % 3, try LiveServer.aak("race-\(index)") { $0.conversionValue = 63 }))
            requests.append(((index + 1) % 3, try LiveServer.aak("race-\(index)", keyID: "apple-cas-identifier/9", key: stranger)))
        }
        let sent = requests
        try await Self.receivers(3, database: database) { clients in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for request in sent {
                    group.addTask { try await clients[request.receiver].execute(uri: aakPath, method: .post, body: request.body).status }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .ok })
        }
        let store = try Self.store(database)
        #expect(try await store.scalar("SELECT count(*) FROM postbacks", as: Int.self) == count)
        #expect(try await store.scalar("SELECT count(*) FROM postbacks WHERE outcome = 'verified' AND countable = 1", as: Int.self) == count)
        #expect(try await store.scalar("SELECT count(*) FROM receipts", as: Int.self) == sent.count)
        // Exactly one verified copy of each was stored, and it is the one the row holds; the other verified copies are
        // duplicates or replays; the forgery was kept apart (stored as unverifiable when it came first, then replaced).
        #expect(try await store.scalar("SELECT count(*) FROM receipts WHERE outcome = 'verified' AND disposition = 'stored'", as: Int.self) == count)
        #expect(try await store.scalar("SELECT count(*) FROM postbacks p JOIN receipts r ON r.id = p.receipt_id WHERE r.outcome = 'verified' AND r.disposition = 'stored'", as: Int.self) == count)
        #expect(try await store.scalar("SELECT count(*) FROM receipts WHERE outcome = 'verified' AND disposition IN ('duplicate', 'replay')", as: Int.self) == 3 * count)
        #expect(try await store.scalar("SELECT count(*) FROM receipts WHERE outcome = 'unverifiable' AND disposition IN ('stored', 'unverified_copy')", as: Int.self) == count)
        let report = try await store.reports.report(try ReportQuery.parse([]))
        #expect(report.rows.first?[try #require(report.columns.firstIndex(of: "counted"))] == .number(String(count)))
    }

    @Test func threeReceiversRunnersExchangeEachTokenOnce() async throws {
        let database = try TestEngine.postgres.freshDatabase()
        let tokens = (0..<24).map { "multi-receiver-token-\($0)" }
        let detailed = AdServicesExchangeTests.detailed
        // Apple holds each answer a moment, so the three runners' claims overlap.
        let standIn = AppleAPIStandIn(Dictionary(uniqueKeysWithValues: tokens.map { ($0, [AppleAPIStandIn.Answer(status: 200, body: detailed, hold: 0.2)]) }))
        try await standIn.serve { url in
            try await Self.receivers(3, database: database, configure: { $0.settings.adServicesURL = url }) { clients in
                // Each token is offered to two receivers at the same moment.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, token) in tokens.enumerated() {
                        for receiver in [index % 3, (index + 1) % 3] {
                            group.addTask {
                                let response = try await AdServicesExchangeTests.submit(clients[receiver], token)
                                #expect([.accepted, .ok].contains(response.status))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let store = try Self.store(database)
                defer { store.close() }
                _ = try await eventually(within: 30) {
                    try await store.scalar("SELECT count(*) FROM adservices_jobs WHERE state <> 'done'", as: Int.self) == 0
                }
            }
        }
        for token in tokens { #expect(standIn.calls(for: token).count == 1, "\(token)") }
        let store = try Self.store(database)
        #expect(try await store.scalar("SELECT count(*) FROM adservices_jobs", as: Int.self) == tokens.count)
        #expect(try await store.scalar("SELECT count(*) FROM attribution_records", as: Int.self) == tokens.count)
    }

    /// Starts `countersign simulate` against `receiver`, 8 requests at a time, signing with the key in `work/key` and
    /// logging what was acknowledged to `work/acks-<seed>`.
    static func simulate(_ receiver: ReceiverProcess, work: String, seed: Int, count: Int) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Checkout.binary)
        process.arguments = ["simulate", "--count", String(count), "--concurrency", "8", "--seed", String(seed), "--url", receiver.url,
                             "--signing-key", work + "/key/private-key.pem", "--ack-log", work + "/acks-\(seed)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// A receiver whose PostgreSQL server dies under load stops on SIGTERM well within the 30 s an orchestrator
    /// usually grants (found when one took 30.7 s: each step of its shutdown waited five seconds for a connection).
    /// On a server of its own, since it kills the server.
    @Test func aReceiverWhoseDatabaseDiedStopsPromptly() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let database = try TestPostgres.createDatabase(on: cluster.server)
        let work = Checkout.temporaryDirectory()
        _ = try await countersign(["keys", "generate", "--out", work + "/key"])
        // A rule, so the forwarder is at work too when the server goes.
        #expect(try await countersign(["forward", "set", "partner", "--url", "http://127.0.0.1:9/postbacks", "--database", database]).status == 0)
        let receiver = try ReceiverProcess(database: database, extraArguments: ["--key", "countersign-simulator/0=\(work)/key/public-key.pem"])
        // The simulator makes every postback before it sends the first (a larger count kept a loaded machine's debug
        // build busy past the wait below).
        let simulator = try Self.simulate(receiver, work: work, seed: 1, count: 3000)
        defer { simulator.terminate() }
        #expect(await eventually(within: 60) { (FileManager.default.contents(atPath: work + "/acks-1")?.count ?? 0) > 2000 }, "nothing was acknowledged")
        cluster.remove()
        receiver.stop(SIGTERM, within: 20)
    }

    /// On a PostgreSQL server of its own, since it stops and starts the server while other tests run.
    @Test func aKilledReceiverAndARestartedDatabaseLoseNothingAcknowledged() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let database = try TestPostgres.createDatabase(on: cluster.server)
        let work = Checkout.temporaryDirectory()
        _ = try await countersign(["keys", "generate", "--out", work + "/key"])
        let trust = ["--key", "countersign-simulator/0=\(work)/key/public-key.pem"]
        let receivers = try (0..<3).map { _ in try ReceiverProcess(database: database, extraArguments: trust) }

        /// Postbacks acknowledged so far, by every simulator (lines of the ack logs): "under load" means after the
        /// acknowledgements begin.
        func acknowledgedSoFar() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: work)) ?? []).filter { $0.hasPrefix("acks-") }.reduce(0) { total, name in
                total + (FileManager.default.contents(atPath: work + "/" + name)?.withUnsafeBytes { $0.count { $0 == UInt8(ascii: "\n") } } ?? 0)
            }
        }
        func waitForAcknowledgements(beyond count: Int) async {
            #expect(await eventually(within: 60) { acknowledgedSoFar() > count }, "the simulators acknowledged nothing more")
        }

        // One receiver is killed under load; the others go on.
        var simulators = try receivers.enumerated().map { try Self.simulate($1, work: work, seed: $0 + 1, count: 1500) }
        await waitForAcknowledgements(beyond: 100)
        receivers[0].stop(SIGKILL)
        for simulator in simulators { simulator.waitUntilExit(within: 120, "countersign simulate") }

        // PostgreSQL stops under load and comes back: no 200 without a commit meanwhile, and both receivers serve again.
        let before = acknowledgedSoFar()
        simulators = try receivers.dropFirst().enumerated().map { try Self.simulate($1, work: work, seed: $0 + 10, count: 3000) }
        await waitForAcknowledgements(beyond: before + 100)
        try cluster.stop()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        func ready(_ receiver: ReceiverProcess) async -> Bool {
            guard let response = try? await client.execute(HTTPClientRequest(url: receiver.url + "/readyz"), timeout: .seconds(5)) else { return false }
            return response.status == .ok
        }
        // `pg_ctl stop -w` returned: the server is down, so readiness, which reads the database, says so.
        for receiver in receivers.dropFirst() { #expect(await !ready(receiver), "ready while the database is down") }
        try cluster.start()
        for receiver in receivers.dropFirst() {
            #expect(await eventually(within: 30) { await ready(receiver) }, "a receiver did not serve again after the database came back")
        }
        for simulator in simulators { simulator.waitUntilExit(within: 120, "countersign simulate") }
        try await client.shutdown()

        let acknowledged = Set(try FileManager.default.contentsOfDirectory(atPath: work).filter { $0.hasPrefix("acks-") }.flatMap { name in
            try String(contentsOfFile: work + "/" + name, encoding: .utf8).split(separator: "\n").map(String.init)
        })
        #expect(acknowledged.count > 500, "the test must acknowledge traffic to mean anything")
        let store = try Self.store(database)
        defer { store.close() }
        let stored = Set(try await store.column("SELECT dedup_key FROM postbacks", as: String.self))
        #expect(acknowledged.subtracting(stored).isEmpty, "\(acknowledged.subtracting(stored).count) acknowledged postbacks are missing")
        #expect(try await store.scalar("SELECT count(*) - count(DISTINCT dedup_key) FROM postbacks", as: Int.self) == 0)
        // No commit thread is left waiting on a connection the restart closed: they shut down as promptly as ever.
        for receiver in receivers { receiver.stop(within: 10) }
    }
}
