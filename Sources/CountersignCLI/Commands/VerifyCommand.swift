import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Postback

/// `countersign verify`: check one postback file and print the outcome as JSON.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify one AAK or SKAdNetwork postback and print the outcome as JSON.",
        discussion: """
        Exit 0 when verified and accepted by the policy; 1 when invalid, unverifiable or refused \
        (for example a development postback without --allow-development); 2 for usage errors.

        Example: countersign verify --allow-development postback.json
        """
    )

    @Flag(name: .customLong("allow-development"), help: "Accept postbacks signed with Apple's development keys.")
    var allowDevelopment = false

    @OptionGroup var keys: KeyOptions

    @Argument(help: "The postback JSON file, or - for standard input.")
    var file: String = "-"

    func run() async throws {
        let ring = try keys.loadKeyRing()
        let body = try readInput(file)
        let policy = TrustPolicy(allowDevelopment: allowDevelopment)
        let result = PostbackVerifier(keyRing: ring).verify(body)
        print(JSONValue.object(VerificationReport.document(result, policy: policy)).prettyPrinted)
        guard case .accept = policy.decide(result) else { throw CLIFailure.rejected("") }
    }
}

/// Reads a file, or standard input for `-`; a failure is a usage error.
func readInput(_ path: String) throws(CLIFailure) -> [UInt8] {
    if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
    guard let data = FileManager.default.contents(atPath: path) else { throw CLIFailure.usage("cannot read \(path)") }
    return Array(data)
}
