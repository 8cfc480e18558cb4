import ConversionSchema
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

    /// What an app's install values are worth under `schema`'s version in force at `time` (its first version when none
    /// is yet), window by window: each value's revenue range, 0 to 0 for a value the schema defines without revenue;
    /// values it leaves undefined are never sent.
    static func worth(_ schema: ConversionSchema, at time: Date) -> TrialValueWorth {
        let time = max(time, schema.versions.first?.effectiveFrom ?? time)
        func range(window: Int, fine: Int?, coarse: CoarseValue.Level?) -> (min: Double, max: Double)? {
            guard case .success(let decoded) = SchemaDecoder.decode(schema, conversionClass: .install, window: window, fine: fine, coarse: coarse,
                                                                    sourceIdentifier: nil, at: time), decoded.defined else { return nil }
            return decoded.revenue.map { ($0.min, $0.max) } ?? (0, 0)
        }
        return TrialValueWorth(
            fine: (0...2).map { window in
                (0...63).compactMap { value in range(window: window, fine: value, coarse: nil).map { .init(value: value, min: $0.min, max: $0.max) } }
            },
            coarse: (0...2).map { window in
                CoarseValue.Level.allCases.compactMap { level in
                    range(window: window, fine: nil, coarse: level).map { .init(value: level.rawValue, min: $0.min, max: $0.max) }
                }
            })
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
