import CountersignServer
import Foundation
import JWS
import Postback
import PostbackMint
import Store

/// `countersign simulate --days N`: a trial of weeks of traffic for one's own apps, written straight into a database
/// with each postback's arrival time (a server would stamp them all "now"), verified with the simulator's key, and the
/// claims and spend file the networks would send for it.
struct TrialWriter {
    let plan: TrialPlan
    let key: ECPrivateKey
    let keyID: String

    /// What one trial wrote.
    struct Summary {
        var ledger: TrialLedger
        var dispositions: [String: Int]
    }

    /// Generates the trial and stores what would have arrived by now, in arrival order, 500 postbacks a transaction
    /// under the rules of `store`'s app registry; folds the report rollup at the end.
    func write(into store: StoreDatabase) async throws -> Summary {
        let ledger = try Trial.generate(plan, key: key, keyID: keyID, forger: try ECPrivateKey.generate())
        let verifier = PostbackVerifier(keyRing: try KeyRing([
            KeyEntry(keyID: keyID, key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "countersign simulate"),
        ]))
        let policy = TrustPolicy(apps: try await store.apps.rules())
        let sent = ledger.sent
        // The store's rules block their thread: they run on the store's pool, not on the cooperative one.
        let dispositions = try await Blocking.run { () throws -> [String: Int] in
            var dispositions: [String: Int] = [:]
            var batch: [Intake] = []
            func flush() throws {
                for disposition in try store.ledger.persist(batch) { dispositions[disposition.rawValue, default: 0] += 1 }
                batch.removeAll(keepingCapacity: true)
            }
            for sent in sent {
                let result = verifier.verify(sent.body, expecting: sent.family)
                var intake = Intake(receivedAt: sent.arrival, remoteAddress: nil, route: IntakeRoute(sent.family), body: sent.body, result: result,
                                    decision: policy.decide(result))
                if intake.isRejected { intake.claimed = ClaimedIdentity.read(sent.body) }
                batch.append(intake)
                if batch.count == 500 { try flush() }
            }
            try flush()
            try store.arrivals.flush()
            try store.rollup.fold()
            return dispositions
        }
        return Summary(ledger: ledger, dispositions: dispositions)
    }
}
