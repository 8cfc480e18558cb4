import Foundation
import JWS
import Postback
import PostbackMint
@testable import Store
import Testing
import TestSupport

/// What counts follows the rules in force (issue 25, item 2): postbacks stored while the app registry left them out
/// count once the registry takes them in, stop counting when it leaves them out again, and the rollup and reports
/// follow, on both engines.
@Suite struct CountingRulesTests {
    static let key = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))
    static let apps: [Int64] = [1_108_187_390, 525_463_029]
    static let networks = ["a.example", "b.example"]

    /// Two postbacks for each app and ad network, stored under `policy`.
    func store(on engine: TestEngine, under policy: TrustPolicy) throws -> StoreDatabase {
        let store = try engine.freshStore()
        var intakes: [Intake] = []
        for app in Self.apps {
            for network in Self.networks {
                for copy in 0..<2 {
                    var fields = AAKPostbackFields(postbackID: Mint.uuid("\(app)-\(network)-\(copy)"))
                    fields.advertisedItemID = app
                    fields.adNetworkID = network
                    let body = try Mint.aak(fields, key: Self.key, keyID: "net/0")
                    let result = verifier.verify(body)
                    intakes.append(Intake(receivedAt: Date(), remoteAddress: nil, route: "aak", body: body, result: result, decision: policy.decide(result)))
                }
            }
        }
        #expect(try store.ledger.persist(intakes).allSatisfy { $0 == .stored })
        try store.rollup.fold()
        return store
    }

    /// The (app, network) pairs counted, from the raw rows.
    func counted(_ store: StoreDatabase) async throws -> Set<String> {
        Set(try await store.column("SELECT advertised_item_id || '/' || ad_network_id FROM postbacks WHERE countable = 1", as: String.self))
    }

    /// Counted postbacks as the report (from the rollup) gives them.
    func reported(_ store: StoreDatabase) async throws -> Int64 {
        let table = try await store.reports.report(try ReportQuery.parse([]))
        return table.rows.first.flatMap { row in row[table.columns.firstIndex(of: "postbacks")!].numberText.flatMap { Int64($0) } } ?? 0
    }

    @Test(arguments: TestEngine.allCases) func storedPostbacksCountAsTheRulesInForceSay(engine: TestEngine) async throws {
        let (first, second) = (Self.apps[0], Self.apps[1])
        let onlyFirstOnA = TrustPolicy(apps: [first: .init(acceptedAdNetworks: ["a.example"])])
        let store = try store(on: engine, under: onlyFirstOnA)
        #expect(try await counted(store) == ["\(first)/a.example"])
        #expect(try await reported(store) == 2)

        // Each change, then the pairs that count under it, written out by hand.
        let changes: [(TrustPolicy, Set<String>)] = [
            (TrustPolicy(apps: [first: .init(), second: .init(acceptedAdNetworks: ["b.example"])]),
             ["\(first)/a.example", "\(first)/b.example", "\(second)/b.example"]),
            (TrustPolicy(), Set(Self.apps.flatMap { app in Self.networks.map { "\(app)/\($0)" } })),
            (TrustPolicy(acceptedAdNetworks: ["b.example"]), Set(Self.apps.map { "\($0)/b.example" })),
            (onlyFirstOnA, ["\(first)/a.example"]),
        ]
        for (policy, expected) in changes {
            let before = try await counted(store)
            let changed = try await store.counting.apply(policy)
            #expect(try await counted(store) == expected)
            // Rows whose count changed, and perhaps others whose reason for not counting changed.
            #expect(changed >= 2 * before.symmetricDifference(expected).count)
            #expect(try await reported(store) == Int64(2 * expected.count))
            #expect(try await store.counting.apply(policy) == 0, "applying the same rules twice changes nothing")
        }
        // Why each one is left out is kept with it.
        let reasons = try await store.column("SELECT DISTINCT coalesce(reason, '') FROM postbacks ORDER BY 1", as: String.self)
        #expect(reasons == ["", "ad_network_not_accepted", "app_not_registered"])
    }
}

extension JSONValue {
    /// The text of a JSON number.
    var numberText: String? {
        if case .number(let text) = self { return text }
        return nil
    }
}
