import Foundation
import JWS
import Testing

/// Paths of the checkout, found from this file, so tests run from any working directory.
enum Checkout {
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let keys = root.appendingPathComponent("keys").path
    static let appleExamples = root.appendingPathComponent("Tests/PostbackTests/Fixtures/apple-examples.json")

    /// The built `countersign` executable beside the test bundle.
    static var binary: String {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("countersign").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return root.appendingPathComponent(".build/debug/countersign").path
    }

    /// One of Apple's example postbacks as a body.
    static func appleExample(_ id: String) throws -> [UInt8] {
        let document = try #require(try JSONParser.parse(Array(Data(contentsOf: appleExamples))).object)
        guard case .array(let vectors) = document["vectors"] else { throw KeyError("no vectors") }
        let vector = try #require(vectors.compactMap(\.object).first { $0["id"]?.string == id })
        return Array(try #require(vector["postback"]).serialized.utf8)
    }

    /// A new empty temporary directory.
    static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("countersign-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// What a finished process printed and returned.
struct ProcessResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs `executable` with `arguments`, feeding `input` on standard input.
func runProcess(_ executable: String, _ arguments: [String], input: [UInt8]? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
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
    if let input { standardInput.fileHandleForWriting.write(Data(input)) }
    try standardInput.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
}

/// Runs the built `countersign`.
func countersign(_ arguments: [String], input: [UInt8]? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
    try runProcess(Checkout.binary, arguments, input: input, environment: environment)
}
