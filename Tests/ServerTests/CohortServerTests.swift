import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import Postback
import PostbackMint
import Store
import Testing
import TestSupport
@testable import CountersignServer

/// `GET /v1/cohorts` and `countersign cohorts` (issue 49, deliverable 5): the same curves from the API and the CLI, and
/// the parameters cohorts do not take refused with what to do.
@Suite struct CohortServerTests {
    @Test func theAPIAndTheCLIGiveTheSameCurvesAndRefuseWhatCohortsDoNotTake() async throws {
        let server = LiveServer()
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "analyst", scopes: [.read]).key
        // Installs two months ago (one week), and ones whose window 0 postbacks arrive now: no week of theirs can have closed.
        let verifier = PostbackVerifier(keyRing: server.keyRing)
        var intakes: [Intake] = []
        let now = Date()
        for (index, daysAgo) in [60, 60, 60, 0.1, 0.1].enumerated() {
            let body = Array(buffer: try LiveServer.aak("C-\(index)") { $0.conversionValue = 10 })
            let result = verifier.verify(body)
            intakes.append(Intake(receivedAt: now.addingTimeInterval(-daysAgo * 86_400), remoteAddress: nil, route: .aak, body: body,
                                  result: result, decision: TrustPolicy().decide(result)))
        }
        #expect(try store.ledger.persist(intakes) == Array(repeating: .stored, count: intakes.count))
        store.close()
        let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
        let answer = AdvertiserIsolationTests.Answers()
        try await server.run { client in
            let curves = try await client.execute(uri: "/v1/cohorts?by=week,ad_network&format=csv", method: .get, headers: bearer)
            #expect(curves.status == .ok && curves.headers[.init("Countersign-Time-Zone")!] == "UTC")
            answer.append(String(buffer: curves.body))
            for (query, fragment) in [("by=day", "day is not a cohort dimension"), ("basis=install", "leave basis out"), ("by=conversion_type", "not a cohort dimension")] {
                let refused = try await client.execute(uri: "/v1/cohorts?" + query, method: .get, headers: bearer)
                #expect(refused.status == .badRequest && refused.json?["error"]?.string == "bad_parameter" && String(buffer: refused.body).contains(fragment), "\(query)")
            }
        }
        let csv = try #require(answer.all.first)
        let lines = csv.split(whereSeparator: \.isNewline)
        // Two weeks: the old one has closed window 0 (a D2 figure of 3 installs), last week's has not.
        #expect(lines.count == 3, "\(csv)")
        let header = lines[0].split(separator: ",").map(String.init)
        let installsD2 = try #require(header.firstIndex(of: "cohort_installs_d2"))
        #expect(lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false)[installsD2] }.sorted() == ["0", "3"])
        let cli = try await countersign(["cohorts", "--by", "week,ad_network", "--format", "csv", "--database", server.settings.database])
        #expect(cli.status == 0 && cli.stdout == csv, "\(cli.stderr)")
        let wrong = try await countersign(["cohorts", "--by", "day", "--database", server.settings.database])
        #expect(wrong.status == 2 && wrong.stderr.contains("day is not a cohort dimension"))
    }
}
