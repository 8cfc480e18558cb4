import Foundation
#if canImport(Glibc)
import Glibc
#endif
import JWS
import Testing


/// Paths of the checkout, found from this file, so tests run from any working directory.
package enum Checkout {
    package static let root: URL = checkoutRoot
    package static let keys = root.appendingPathComponent("keys").path
    package static let appleExamples = root.appendingPathComponent("Tests/PostbackTests/Fixtures/apple-examples.json")

    /// The built `countersign` executable beside the test bundle.
    package static var binary: String {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("countersign").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return root.appendingPathComponent(".build/debug/countersign").path
    }

    /// One of Apple's example postbacks as a body.
    package static func appleExample(_ id: String) throws -> [UInt8] {
        let document = try #require(try JSONParser.parse(Array(Data(contentsOf: appleExamples))).object)
        guard case .array(let vectors) = document["vectors"] else { throw KeyError("no vectors") }
        let vector = try #require(vectors.compactMap(\.object).first { $0["id"]?.string == id })
        return Array(try #require(vector["postback"]).serialized.utf8)
    }

    /// A new empty temporary directory.
    package static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("countersign-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Polls `condition` every 50 ms until it holds, for up to `seconds` (a bound for a hung test, not a measure of
/// speed); true once it holds.
package func eventually(within seconds: TimeInterval, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// What a finished process printed and returned.
package struct ProcessResult {
    package let status: Int32
    package let stdout: String
    package let stderr: String

    /// A result as a process would leave it.
    package init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs `executable` with `arguments`, feeding `input` on standard input, and waits for it on a thread of its own (an
/// in-process server may need every thread of the cooperative pool meanwhile). Input is written and both outputs are
/// read at the same time, so a child that fills one pipe while another waits never stalls.
package func runProcess(_ executable: String, _ arguments: [String], input: [UInt8]? = nil, environment: [String: String]? = nil) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let output = Pipe()
    let errors = Pipe()
    let standardInput = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = standardInput
    try process.run()
    return await withCheckedContinuation { continuation in
        let streams = DispatchGroup()
        let collected = CollectedOutput()
        DispatchQueue.global().async(group: streams) {
            if let input { try? standardInput.fileHandleForWriting.write(contentsOf: input) }
            try? standardInput.fileHandleForWriting.close()
        }
        DispatchQueue.global().async(group: streams) { collected.stderr = errors.fileHandleForReading.readDataToEndOfFile() }
        Thread {
            collected.stdout = output.fileHandleForReading.readDataToEndOfFile()
            streams.wait()
            process.waitUntilExit()
            continuation.resume(returning: ProcessResult(status: process.terminationStatus, stdout: String(decoding: collected.stdout, as: UTF8.self),
                                                         stderr: String(decoding: collected.stderr, as: UTF8.self)))
        }.start()
    }
}

/// What a child wrote, filled by the threads that read it before anyone looks.
private final class CollectedOutput: @unchecked Sendable {
    var stdout = Data()
    var stderr = Data()
}

extension Process {
    /// Waits for the process to end, at most `seconds`; past that it is killed and the test fails, so a process that
    /// will not stop fails its test instead of holding up the whole run.
    package func waitUntilExit(within seconds: TimeInterval, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if isRunning {
            Issue.record("\(what()) was still running after \(Int(seconds)) s; killed", sourceLocation: sourceLocation)
            kill(processIdentifier, SIGKILL)
        }
        waitUntilExit()
    }
}

/// Runs the built `countersign`.
package func countersign(_ arguments: [String], input: [UInt8]? = nil, environment: [String: String]? = nil) async throws -> ProcessResult {
    try await runProcess(Checkout.binary, arguments, input: input, environment: environment)
}

/// A plain TCP connection to a loopback port, for tests that must misbehave the way no HTTP client will
/// (send headers and stall, dribble a body).
package final class RawConnection: @unchecked Sendable {
    package let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; reads give up after `readTimeout` seconds.
    package init(port: Int, readTimeout: Double = 10) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw KeyError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(descriptor); throw KeyError("connect() failed") }
        var timeout = timeval(tv_sec: Int(readTimeout), tv_usec: Int((readTimeout - readTimeout.rounded(.down)) * 1e6))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends `text`; false once the server has closed the connection.
    @discardableResult
    package func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads until the server closes the connection or the read timeout passes; `closed` tells which. The blocking
    /// reads run on a thread of their own: an in-process server needs the cooperative pool to answer.
    package func readUntilClosed() async -> (text: String, closed: Bool) {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.blockingRead()) }.start()
        }
    }

    /// Reads until what arrived ends with `marker`, the server closes the connection or the read timeout passes.
    package func read(until marker: String) async -> String {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.blockingRead(until: Array(marker.utf8)).text) }.start()
        }
    }

    private func blockingRead(until marker: [UInt8]? = nil) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let marker, received.count >= marker.count, Array(received.suffix(marker.count)) == marker { return (String(decoding: received, as: UTF8.self), false) }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, marker == nil ? $0.count : 1, 0) }
            if count > 0 { received += buffer.prefix(count); continue }
            return (String(decoding: received, as: UTF8.self), count == 0 || errno == ECONNRESET)
        }
    }

    deinit { close(descriptor) }
}
