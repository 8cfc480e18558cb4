import ArgumentParser
import AsyncHTTPClient
import Foundation
import JWS
import NIOCore
import NIOHTTP1
import Postback
import PostbackMint

/// `countersign simulate`: realistic signed postbacks for demos, tests and load.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Generate realistic signed postbacks and send them to a server or write them to a file.",
        discussion: """
        The postbacks are signed with --signing-key (or the key in --key-out, generated there on first use); tell the server to trust it:
          countersign keys generate --out sim
          countersign serve --key countersign-simulator/0=sim/public-key.pem
          countersign simulate --signing-key sim/private-key.pem --count 1000 --url http://127.0.0.1:8080
        --out writes one body per line.
        """
    )

    @Option(help: "How many requests.") var count: Int
    @Option(help: "Base URL of a countersign server; postbacks go to the well-known paths.") var url: String?
    @Option(help: "Write bodies, one per line, to this file instead of sending them.") var out: String?
    @Option(help: "Requests in flight at once with --url.") var concurrency = 8
    @Option(help: "Random seed, so a run can be repeated exactly.") var seed: UInt64 = 1
    @Option(name: .customLong("signing-key"), help: "P-256 private key PEM to sign with.") var signingKey: String?
    @Option(name: .customLong("key-out"), help: "Where the key pair is kept when --signing-key is not given: used again if there, else generated.") var keyOut = "data/simulator-key"
    @Option(help: "The kid AAK postbacks carry; the server must trust it under this id.") var kid = "countersign-simulator/0"
    @Option(name: .customLong("ack-log"), help: "Append the dedup key of every postback answered 200 to this file.") var ackLog: String?
    @Flag(name: .customLong("distinct"), help: "Send only distinct originals: no duplicates or replays (for load tests).") var distinct = false

    func validate() throws {
        guard count > 0 else { throw ValidationError("--count must be positive") }
        guard (url == nil) != (out == nil) else { throw ValidationError("give exactly one of --url and --out") }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
    }

    func run() async throws {
        let key = try loadOrCreateKey()
        var simulation = Simulation(seed: seed, key: key, keyID: kid, repeats: !distinct)
        if let out {
            guard FileManager.default.createFile(atPath: out, contents: nil), let handle = FileHandle(forWritingAtPath: out) else {
                throw CLIFailure.usage("cannot write \(out)")
            }
            var chunk = [UInt8]()
            for _ in 0..<count {
                chunk += try simulation.next().body
                chunk.append(0x0A)
                if chunk.count > 1 << 20 { handle.write(Data(chunk)); chunk.removeAll(keepingCapacity: true) }
            }
            handle.write(Data(chunk))
            try handle.close()
            FileHandle.standardError.write(Data("wrote \(count) postbacks to \(out)\n".utf8))
            return
        }
        try await send(&simulation, to: url!)
    }

    private func loadOrCreateKey() throws -> ECPrivateKey {
        if let signingKey {
            do { return try ECPrivateKey(pem: String(decoding: try readInput(signingKey), as: UTF8.self)) } catch let error as KeyError {
                throw CLIFailure.usage("\(signingKey): \(error.message)")
            }
        }
        // A key made by an earlier run is used again, so the server that trusts it goes on accepting what is sent.
        let privatePath = keyOut + "/private-key.pem"
        if let text = try? String(contentsOfFile: privatePath, encoding: .utf8) {
            do { return try ECPrivateKey(pem: text) } catch {
                throw CLIFailure.usage("\(privatePath) holds no P-256 private key; remove it, or pass --signing-key or another --key-out")
            }
        }
        let key = try ECPrivateKey.generate()
        try FileManager.default.createDirectory(atPath: keyOut, withIntermediateDirectories: true)
        try Data(key.pem.utf8).write(to: URL(fileURLWithPath: keyOut + "/private-key.pem"))
        try Data(key.publicKey.pem.utf8).write(to: URL(fileURLWithPath: keyOut + "/public-key.pem"))
        FileHandle.standardError.write(Data("generated a signing key; start the server with --key \(kid)=\(keyOut)/public-key.pem\n".utf8))
        return key
    }

    private func send(_ simulation: inout Simulation, to base: String) async throws {
        let base = base.hasSuffix("/") ? String(base.dropLast()) : base
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(timeout: .init(connect: .seconds(2), read: .seconds(30)))
        )
        let ackHandle: FileHandle? = try ackLog.map { path in
            if !FileManager.default.fileExists(atPath: path), !FileManager.default.createFile(atPath: path, contents: nil) {
                throw CLIFailure.usage("cannot create \(path)")
            }
            guard let handle = FileHandle(forWritingAtPath: path) else { throw CLIFailure.usage("cannot write \(path)") }
            handle.seekToEndOfFile()
            return handle
        }
        var tally: [String: Int] = [:]
        let started = Date()
        var postbacks: [SimulatedPostback] = []
        for _ in 0..<count { postbacks.append(try simulation.next()) }
        try await withThrowingTaskGroup(of: (SimulatedPostback, String).self) { group in
            var iterator = postbacks.makeIterator()
            func start(_ postback: SimulatedPostback) {
                group.addTask {
                    let path = postback.family == .aak ? "/.well-known/appattribution/report-attribution/" : "/.well-known/skadnetwork/report-attribution/"
                    var request = HTTPClientRequest(url: base + path)
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(bytes: postback.body))
                    do {
                        let response = try await client.execute(request, timeout: .seconds(10))
                        let answer = try await response.body.collect(upTo: 1 << 16)
                        if response.status == .ok,
                           let status = (try? JSONParser.parse(Array(buffer: answer)))?.object?["status"]?.string {
                            return (postback, status)
                        }
                        return (postback, "http_\(response.status.code)")
                    } catch {
                        return (postback, "connection_error")
                    }
                }
            }
            for _ in 0..<concurrency { if let next = iterator.next() { start(next) } }
            var serverGone = false
            while let (postback, status) = try await group.next() {
                tally[status, default: 0] += 1
                if ["stored", "duplicate", "replay"].contains(status) { ackHandle?.write(Data((postback.dedupKey + "\n").utf8)) }
                // A connection failure means the server is gone: stop starting requests rather than wait out each timeout.
                if status == "connection_error" { serverGone = true }
                if !serverGone, let next = iterator.next() { start(next) }
            }
            var notSent = 0
            while iterator.next() != nil { notSent += 1 }
            if notSent > 0 { tally["not_sent"] = notSent }
        }
        try? ackHandle?.close()
        try await client.shutdown()
        let seconds = Date().timeIntervalSince(started)
        var summary = JSONObject()
        summary.set("sent", .number(String(count)))
        summary.set("seconds", .number(String(format: "%.3f", seconds)))
        summary.set("per_second", .number(String(format: "%.1f", Double(count) / max(seconds, 0.001))))
        for (status, number) in tally.sorted(by: { $0.key < $1.key }) { summary.set(status, .number(String(number))) }
        print(JSONValue.object(summary).prettyPrinted)
    }
}
