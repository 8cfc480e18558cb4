import Foundation
import JWS
import Postback

/// A daily count of what arrived, by app, protocol, version, ad network, channel, outcome and environment, with the
/// last arrival's time: what `apps status` reads (``SetupStatus``), so it never scans the postbacks.
///
/// Counting costs the write path almost nothing: a committed batch adds its counts to a tally in memory
/// (``ArrivalTally``), and the tally is written at most once a second, with the next batch's transaction, or by
/// ``flush()`` when the writer is idle and when it stops. So the counts lag by up to a second, and a crash loses at most
/// that second's counts (never a postback). On PostgreSQL each process writes rows of its own (`writer`), so receivers
/// never wait on each other's counts; readers add them up.
///
/// Bounded: a request beyond its budget is not stored and not counted; rows of refused and invalid bodies are deleted
/// after the rejected-receipt retention, rows of unverifiable postbacks after theirs, the rest after
/// ``verifiedRetentionDays``.
public struct ArrivalLog: Sendable {
    let engine: any DatabaseEngine
    let tally: ArrivalTally
    let writer: String

    /// Days the counts of verified postbacks are kept.
    public static let verifiedRetentionDays = 400

    /// One row's key.
    struct Key: Hashable, Comparable {
        var day: String
        var app: AppID
        var family: String
        var version: String
        var adNetwork: String
        var channel: String
        var outcome: String
        var environment: String

        /// The order rows are written in, the same in every transaction: two transactions of one writer that overlap
        /// (a commit that took more than the second between two writes) lock its rows in the same order.
        static func < (left: Key, right: Key) -> Bool {
            let (first, second) = ((left.day, left.app, left.family, left.version), (right.day, right.app, right.family, right.version))
            guard first == second else { return first < second }
            return (left.adNetwork, left.channel, left.outcome, left.environment) < (right.adNetwork, right.channel, right.outcome, right.environment)
        }
    }

    /// The key an intake adds to, or nil when it names no app (nothing to show it under). A postback that was decoded
    /// (verified, even if refused by the rules, or unverifiable) is logged by its fields; a body that failed by what it
    /// claims to be.
    static func key(of intake: Intake) -> Key? {
        let day = String(intake.receivedAtText.prefix(10))
        if let postback = intake.result.postback {
            var environment = ""
            if case .verified(_, let signer) = intake.result { environment = signer.environment.rawValue }
            let outcome = intake.isRejected ? "refused" : intake.result.outcome.rawValue
            return Key(day: day, app: postback.app, family: postback.family.rawValue, version: postback.version ?? "",
                       adNetwork: postback.adNetworkID, channel: intake.channel.rawValue, outcome: outcome, environment: environment)
        }
        guard let claimed = intake.claimed, let app = claimed.app else { return nil }
        var family = intake.route.expected?.rawValue ?? ""
        if case .invalid(_, let known?) = intake.result { family = known.rawValue }
        return Key(day: day, app: app, family: family, version: "", adNetwork: claimed.adNetwork ?? "", channel: intake.channel.rawValue,
                   outcome: intake.result.outcome.rawValue, environment: "")
    }

    static let upsertSQL = """
        INSERT INTO arrivals_daily (day, app, protocol, version, ad_network_id, channel, outcome, environment, writer, arrivals, last_received_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (day, app, protocol, version, ad_network_id, channel, outcome, environment, writer) DO UPDATE SET
            arrivals = arrivals_daily.arrivals + excluded.arrivals,
            last_received_at = CASE WHEN excluded.last_received_at > arrivals_daily.last_received_at
                                    THEN excluded.last_received_at ELSE arrivals_daily.last_received_at END
        """

    /// What `batch` adds to the counts.
    static func counts(_ batch: [Intake]) -> ArrivalTally.Counts {
        var counts = ArrivalTally.Counts()
        for intake in batch {
            guard let key = key(of: intake) else { continue }
            counts.add(key, arrivals: 1, last: intake.receivedAtText)
        }
        return counts
    }

    /// Adds `counts` to the stored rows of `writer`.
    static func write(_ counts: ArrivalTally.Counts, _ db: any SQLSession, writer: String) throws {
        for (key, entry) in counts.entries.sorted(by: { $0.key < $1.key }) {
            try db.execute(upsertSQL, [key.day, key.app, key.family, key.version, key.adNetwork, key.channel, key.outcome, key.environment,
                                       writer, entry.arrivals, entry.last])
        }
    }

    /// Writes the counts kept in memory now, in a transaction of their own; on failure they stay for the next time.
    public func flush() throws {
        guard let counts = tally.take() else { return }
        do {
            try engine.transaction { [writer] db in try Self.write(counts, db, writer: writer) }
        } catch {
            tally.giveBack(counts)
            throw error
        }
    }

    /// Whether counts wait in memory to be written.
    public var hasPending: Bool { tally.hasPending }

    /// Deletes the rows past their retention (days before the cutoffs), at most `limit`; returns how many.
    public func prune(rejectedBefore: Date, unverifiableBefore: Date, verifiedBefore: Date, limit: Int) async throws -> Int {
        let days = [rejectedBefore, unverifiableBefore, verifiedBefore].map { String(Timestamp.format($0).prefix(10)) }
        return try await engine.write { db in
            try db.execute("""
                DELETE FROM arrivals_daily WHERE (day, app, protocol, version, ad_network_id, channel, outcome, environment, writer) IN (
                    SELECT day, app, protocol, version, ad_network_id, channel, outcome, environment, writer FROM arrivals_daily
                    WHERE (outcome IN ('invalid', 'refused') AND day < ?) OR (outcome = 'unverifiable' AND day < ?) OR day < ?
                    LIMIT ?)
                """, [days[0], days[1], days[2], limit])
        }
    }
}
