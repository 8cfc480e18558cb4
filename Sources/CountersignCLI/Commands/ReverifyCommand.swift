import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Postback
import Store

/// `countersign reverify`: re-check stored unverifiable postbacks after keys change.
struct ReverifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reverify",
        abstract: "Re-check stored unverifiable postbacks against the current key ring and promote those that now verify; apply the app registry to every stored postback.",
        discussion: """
        Give the same --allow-development and --accept-ad-network as serve, so stored postbacks count as the server \
        counts them.

        Example: countersign reverify --database data/countersign.sqlite --key apple-cas-identifier/1=new-key.pem
        """
    )

    @OptionGroup var database: DatabaseOption
    @Flag(name: .customLong("allow-development"), help: "Count development-key postbacks as accepted (never as production).") var allowDevelopment = false
    @Option(name: .customLong("accept-ad-network"), help: "The ad network ids serve accepts (repeatable; none means any).") var acceptedAdNetworks: [String] = []
    @OptionGroup var keys: KeyOptions

    func run() async throws {
        let verifier = PostbackVerifier(keyRing: try keys.loadKeyRing())
        let store = try database.open()
        // The app registry applies as at ingest: a promoted postback of an unregistered app is kept, not counted.
        let policy = TrustPolicy(allowDevelopment: allowDevelopment, acceptedAdNetworks: Set(acceptedAdNetworks), apps: try await store.apps.rules())
        let summary = try await store.ledger.reverify { route, body in
            let result = verifier.verify(body, expecting: route.expected)
            return (result, policy.decide(result))
        }
        // Then every stored postback counts as the rules in force say (the registry may have changed since it arrived).
        let recounted = try await store.counting.apply(policy)
        print(JSONValue.object(JSONObject([
            JSONMember(key: "checked", value: .number(String(summary.checked))),
            JSONMember(key: "promoted", value: .number(String(summary.promoted))),
            JSONMember(key: "still_unverifiable", value: .number(String(summary.stillUnverifiable))),
            JSONMember(key: "now_invalid", value: .number(String(summary.nowInvalid))),
            JSONMember(key: "recounted", value: .number(String(recounted))),
        ])).prettyPrinted)
    }
}
