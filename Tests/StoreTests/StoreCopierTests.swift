import AdServices
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Moving an installation (issue 12): a simulated SQLite database copied into PostgreSQL answers the same, and a second
/// run changes nothing.
@Suite struct StoreCopierTests {
    @Test func anSQLiteInstallationCopiedIntoPostgreSQLAnswersTheSame() async throws {
        let source = try TestEngine.sqlite.freshStore()
        _ = try await source.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        _ = try await source.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        let intakes = try EngineEqualityTests.traffic(count: 400)
        for start in stride(from: 0, to: intakes.count, by: 50) { _ = try source.ledger.persist(Array(intakes[start..<min(start + 50, intakes.count)])) }
        try source.rollup.fold(limit: 100)
        let key = try await source.apiKeys.create(name: "analyst").key
        _ = try await source.tokenJobs.enqueue(TokenSubmission(token: "copied-token"), maximumOpen: 10)
        let record = try IAdDictionary.normalise(Array(#"{"Version3.1": {"iad-attribution": "true", "iad-campaign-id": "15292426"}}"#.utf8)).get()
        _ = try await source.attributions.storeClientReported(record, app: 10738027756, installID: "device-1", body: [])

        let target = try TestEngine.postgres.freshStore()
        let first = try StoreCopier(source: source, target: target).copy { _, _, _ in }
        #expect(first.copied["postbacks"] == (try await source.scalar("SELECT count(*) FROM postbacks", as: Int.self)))
        #expect(first.copied["schemas"] == 2)
        // PostgreSQL has statistics at once: its planner knows how many postbacks there are before any report.
        let analysed = try await target.scalar("SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('postbacks', 'receipts', 'postback_events') AND last_analyze IS NOT NULL", as: Int.self)
        #expect(analysed == 3)
        #expect(try await StoreCopier(source: source, target: target).check() == [])
        let sourceAnswers = try await EngineEqualityTests.answers(source)
        #expect(try await EngineEqualityTests.answers(target) == sourceAnswers)
        #expect(try await target.apiKeys.grant(for: key) != nil)
        #expect(try await target.schemas.document(app: 10738027756)?.revision == 2)

        // Again: nothing new, the same answers, and new rows get new ids after the copied ones.
        let second = try StoreCopier(source: source, target: target).copy { _, _, _ in }
        #expect(second.copied.values.allSatisfy { $0 == 0 })
        #expect(second.alreadyThere == first.copied)
        #expect(try await EngineEqualityTests.answers(target) == sourceAnswers)
        let next = try await target.apiKeys.create(name: "after the move")
        #expect(next.record.id > (try await source.scalar("SELECT max(id) FROM api_keys", as: Int64.self) ?? 0))
    }
}
