import ArgumentParser
import Foundation
import JWS
import Postback
import Store

/// `countersign reverify`: re-check stored unverifiable postbacks after keys change.
struct ReverifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reverify",
        abstract: "Re-check stored unverifiable postbacks against the current key ring and promote those that now verify.",
        discussion: "Example: countersign reverify --database data/countersign.sqlite --key apple-cas-identifier/1=new-key.pem"
    )

    @OptionGroup var database: DatabaseOption
    @Flag(name: .customLong("allow-development"), help: "Count development-key postbacks as accepted (never as production).") var allowDevelopment = false
    @OptionGroup var keys: KeyOptions

    func run() async throws {
        let verifier = PostbackVerifier(keyRing: try keys.loadKeyRing())
        let store = try database.open()
        // The app registry applies as at ingest: a promoted postback of an unregistered app is kept, not counted.
        let policy = TrustPolicy(allowDevelopment: allowDevelopment, apps: try store.apps.rulesAtStart())
        let summary = try await store.ledger.reverify { route, body in
            let result = verifier.verify(body, expecting: PostbackProtocol(rawValue: route))
            return (result, policy.decide(result))
        }
        print(JSONValue.object(JSONObject([
            JSONMember(key: "checked", value: .number(String(summary.checked))),
            JSONMember(key: "promoted", value: .number(String(summary.promoted))),
            JSONMember(key: "still_unverifiable", value: .number(String(summary.stillUnverifiable))),
            JSONMember(key: "now_invalid", value: .number(String(summary.nowInvalid))),
        ])).prettyPrinted)
    }
}
