import ArgumentParser
import Foundation
import JWS
import PostbackMint

/// `countersign impression sign`: an ad network's JWS impression.
struct ImpressionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "impression",
        abstract: "Sign AdAttributionKit impressions as an ad network.",
        subcommands: [Sign.self]
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
}
