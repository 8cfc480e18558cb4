import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import Logging
import NIOCore
import Postback
import Store
import Testing
import TestSupport
@testable import PostbackServer

/// Rejected bodies are pruned after the retention and a junk flood cannot grow the database without bound; counted
/// postbacks are never touched (issue 15, item 3).
@Suite struct RetentionTests {
    static let junk = Array(("{\"jws-string\": \"" + String(repeating: "A", count: 900) + "\"}").utf8)

    @Test(arguments: TestEngine.allCases) func rejectedBodiesOlderThanTheRetentionArePrunedAndNothingElse(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let verifier = PostbackVerifier(keyRing: LiveServer().keyRing)
        func intake(_ body: [UInt8], daysAgo: Double) -> Intake {
            let result = verifier.verify(body)
            return Intake(receivedAt: Date().addingTimeInterval(-daysAgo * 86_400), remoteAddress: "192.0.2.1", route: "aak", body: body,
                          result: result, decision: TrustPolicy().decide(result))
        }
        let genuine = Array(buffer: try LiveServer.aak("R-1"))
        let dispositions = try store.ledger.persist([
            intake(Self.junk, daysAgo: 40), intake(Self.junk, daysAgo: 31), intake(genuine, daysAgo: 40), intake(genuine, daysAgo: 40),
            intake(Self.junk, daysAgo: 2),
        ])
        #expect(dispositions == [.rejected, .rejected, .stored, .duplicate, .rejected])
        let pruner = RejectedBodyPruner(store: store, retention: 30 * 86_400, logger: Logger(label: "test"))
        #expect(try await pruner.round() == 2)
        #expect(try await pruner.round() == 0)
        let bodies = try await store.rows("SELECT disposition, length(body) AS bytes FROM receipts ORDER BY id")
        #expect(try bodies.map { try $0.get("bytes", as: Int.self) } == [0, 0, genuine.count, genuine.count, Self.junk.count])
        // The receipts stay, so the intake report still counts every rejected request.
        let intake = try await store.reports.intake(try IntakeQuery.parse([("status", "rejected")]))
        #expect(intake.rows.first?.last == .number("3"))
        #expect(try await store.scalar("SELECT count(*) FROM postbacks WHERE countable = 1", as: Int.self) == 1)
    }

    @Test func aJunkFloodStoresAtMostTheBudgetOfBodiesPerSource() async throws {
        var server = LiveServer()
        server.settings.rejectedBodyBudget = 5
        try await server.run { client in
            for _ in 0..<60 {
                let answer = try await client.execute(uri: aakPath, method: .post, body: ByteBuffer(bytes: Self.junk))
                #expect(answer.status == .badRequest)
            }
            let genuine = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("R-2"))
            #expect(genuine.status == .ok)
        }
        let receipts = try await server.scalar("SELECT count(*) FROM receipts WHERE disposition = 'rejected'", as: Int.self)
        let kept = try await server.scalar("SELECT count(*) FROM receipts WHERE disposition = 'rejected' AND length(body) > 0", as: Int.self) ?? 0
        let bytes = try await server.scalar("SELECT sum(length(body)) FROM receipts WHERE disposition = 'rejected'", as: Int.self) ?? 0
        #expect(receipts == 60)
        // The burst of 5, and perhaps one more refilled at 5 a minute while the flood ran.
        #expect((5...6).contains(kept))
        #expect(bytes <= 6 * Self.junk.count)
        #expect(try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 1)
    }
}
