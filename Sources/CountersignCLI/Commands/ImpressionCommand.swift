import CountersignServer
import ArgumentParser
import Foundation
import JWS
import PostbackMint

/// `countersign impression sign`: an ad network's JWS impression.
struct ImpressionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "impression",
        abstract: "Sign AdAttributionKit impressions as an ad network.",
        subcommands: [Sign.self, Verify.self]
    )

    /// `countersign impression sign`.
    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a compact JWS impression (ES256, kid = your ad network id).",
            discussion: "Example: countersign impression sign --key private-key.pem --network-id example.adattributionkit --source-identifier 5239 --advertised-item 1108187390"
        )

        @Option(help: "The ad network's private key PEM.") var key: String
        @Option(name: .customLong("network-id"), help: "Your ad network id (lowercase).") var networkID: String
        @Option(name: .customLong("source-identifier"), help: "The 4-digit hierarchical source identifier.") var sourceIdentifier: Int
        @Option(name: .customLong("advertised-item"), help: "The advertised app's item id.") var advertisedItem: Int64
        @Option(name: .customLong("publisher-item"), help: "The publisher app's item id (0 for a development impression).") var publisherItem: Int64?
        @Option(name: .customLong("impression-id"), help: "The impression id (default: a new UUID).") var impressionID: String?
        @Option(help: "Creation time in milliseconds since 1970 (default: now).") var timestamp: Int64?
        @Flag(name: .customLong("eligible-for-re-engagement"), help: "Mark the impression eligible for re-engagement.") var eligibleForReEngagement = false

        func validate() throws {
            guard (0...9999).contains(sourceIdentifier) else { throw ValidationError("--source-identifier must be 0 to 9999") }
            guard networkID == networkID.lowercased() else { throw ValidationError("--network-id must be lowercase, as Apple requires") }
        }

        func run() async throws {
            let pem = try String(decoding: readInput(key), as: UTF8.self)
            do {
                let privateKey = try ECPrivateKey(pem: pem)
                let jws = try Mint.impression(
                    adNetworkID: networkID, sourceIdentifier: sourceIdentifier, advertisedItemID: advertisedItem,
                    publisherItemID: publisherItem, impressionID: impressionID ?? UUID().uuidString,
                    timestampMilliseconds: timestamp ?? Int64(Date().timeIntervalSince1970 * 1000),
                    eligibleForReEngagement: eligibleForReEngagement, key: privateKey)
                print(jws)
            } catch {
                throw CLIFailure.usage("\(key): \(error.message)")
            }
        }
    }

    /// `countersign impression verify`.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a compact JWS impression against the ad network's public key and print its payload.",
            discussion: "Exit 0 when the signature verifies, 1 when it does not, 2 for usage errors."
        )

        @Option(name: .customLong("public-key"), help: "The ad network's public key PEM.") var publicKey: String
        @Argument(help: "A file holding the compact JWS, or - for standard input.") var file: String = "-"

        func run() async throws {
            let key: ECPublicKey
            do { key = try ECPublicKey(pem: String(decoding: try readInput(publicKey), as: UTF8.self)) } catch let error as KeyError {
                throw CLIFailure.usage("\(publicKey): \(error.message)")
            }
            let text = String(decoding: try readInput(file), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            switch CompactJWS.parse(Array(text.utf8)) {
            case .failure(let failure):
                throw CLIFailure.rejected("invalid impression: \(failure.rawValue)")
            case .success(let jws):
                guard jws.verify(with: key) else { throw CLIFailure.rejected("invalid impression: bad_signature") }
                let payload = (try? JSONParser.parse(jws.payload)) ?? .null
                print(JSONValue.object(JSONObject([
                    JSONMember(key: "kid", value: .string(jws.header.keyID)),
                    JSONMember(key: "payload", value: payload),
                ])).prettyPrinted)
            }
        }
    }
}
