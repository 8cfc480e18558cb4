import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Issue 49, finding 11: with an app picked, the intake report (the Overview's rejected bodies) counts bodies that failed
/// verification under the app and ad network they claim, as performance's `forged` does, instead of "nothing rejected".
@Suite struct IntakeClaimedAppTests {
    @Test(arguments: TestEngine.allCases) func rejectedBodiesCountUnderTheAppTheyClaim(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let key = try ECPrivateKey.generate(), forger = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        func intake(_ id: String, app: Int64, signer: ECPrivateKey) throws -> Intake {
            var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
            fields.advertisedItemID = app
            let body = try Mint.aak(fields, key: signer, keyID: "net/0")
            let result = verifier.verify(body)
            var intake = Intake(receivedAt: Date(), remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result))
            if intake.isRejected { intake.claimed = ClaimedIdentity.read(body) }
            return intake
        }
        let statuses = try store.ledger.persist([try intake("I-1", app: 111, signer: key), try intake("I-2", app: 111, signer: forger),
                                                 try intake("I-3", app: 111, signer: forger), try intake("I-4", app: 222, signer: forger)])
        #expect(statuses.filter { $0 == .rejected }.count == 3, "\(statuses)")
        // Independently: the receipts' claimed apps of the rejected bodies.
        let claimed = try await store.rows("SELECT claimed_app, claimed_ad_network FROM receipts WHERE disposition = 'rejected'", [])
        let forApp = try claimed.filter { try $0.get("claimed_app", as: Int64?.self) == 111 }.count
        #expect(forApp == 2)
        func counts(_ parameters: [(String, String)]) async throws -> [String: Int] {
            let table = try await store.reports.intake(try IntakeQuery.parse(parameters + [("by", "status")]))
            return Dictionary(uniqueKeysWithValues: table.rows.compactMap { row in
                guard case .string(let status) = row[0], case .number(let count) = row[1] else { return nil }
                return (status, Int(count) ?? -1)
            })
        }
        #expect(try await counts([("app", "111")]) == ["counted": 1, "rejected": forApp])
        #expect(try await counts([("app", "222")])["rejected"] == 1)
        #expect(try await counts([("ad_network", "example.adattributionkit"), ("app", "111")])["rejected"] == forApp)
        #expect(try await counts([])["rejected"] == 3)
    }
}
