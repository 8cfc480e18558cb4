import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import Store
import TestSupport
@testable import CountersignServer

/// GET /v1/setup says what stored postbacks tell about an app's encoder, counted from what was sent.
@Suite struct EncoderSymptomTests {
    @Test(arguments: TestEngine.allCases) func valuesOfZeroShowAsASymptomWithItsCause(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        defer { store.close() }
        let key = try await store.apiKeys.create(name: "reader", scopes: [.read]).key
        try await server.run { client in
            // 27 installs whose app always set 0, and 1 with a value: 96% of 0.
            for index in 0..<28 {
                let response = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("zero-\(index)") {
                    $0.advertisedItemID = 1_108_187_390
                    $0.conversionValue = index < 27 ? 0 : 12
                    $0.sourceIdentifier = "1123"
                })
                #expect(response.status == .ok)
            }
            let setup = try await client.execute(uri: "/v1/setup?app=1108187390&days=2", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(setup.status == .ok)
            let document = try #require(setup.json)
            guard case .array(let days)? = document["encoder_days"], case .array(let symptoms)? = document["encoder"] else {
                Issue.record("no encoder figures: \(document)")
                return
            }
            let day = try #require(days.first?.object)
            #expect(day["postbacks"] == .number("28") && day["value_allowed"] == .number("28"))
            #expect(day["null_or_zero_share"] == .number("0.9643"), "27 of 28")
            let symptom = try #require(symptoms.first?.object)
            #expect(symptom["symptom"] == .string("null_or_zero") && symptom["postbacks"] == .number("28"))
            #expect(symptom["cause"]?.string?.contains("does not set values") == true)
            #expect(symptom["docs"] == .string("docs/app-integration.md#4-check-it-in-production"))
        }
    }
}
