import Foundation
import JWS
import Postback

/// A daily count of what arrived, by app, protocol, version, ad network, channel, outcome and environment, with the
/// last arrival's time: what `apps status` reads (``SetupStatus``), so it never scans the postbacks. Each batch adds
/// to it in its own transaction, one upsert per distinct key. On PostgreSQL each process writes rows of its own
/// (`writer`), so receivers never wait on each other's counts; readers add them up.
///
/// Bounded: a request beyond its budget is not stored and not logged; rows of refused and invalid bodies are deleted
/// after the rejected-receipt retention, rows of unverifiable postbacks after theirs, the rest after
/// ``verifiedRetentionDays``.
public struct ArrivalLog: Sendable {
    let engine: any DatabaseEngine

    /// Days the counts of verified postbacks are kept.
    public static let verifiedRetentionDays = 400

    /// One row's key.
    struct Key: Hashable {
        var day: String
        var app: Int64
        var family: String
        var version: String
        var adNetwork: String
        var channel: String
        var outcome: String
        var environment: String
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
            return Key(day: day, app: postback.advertisedItemID, family: postback.family.rawValue, version: postback.version ?? "",
                       adNetwork: postback.adNetworkID, channel: intake.channel.rawValue, outcome: outcome, environment: environment)
        }
        guard let claimed = intake.claimed, let app = claimed.app else { return nil }
        var family = ["aak", "skan"].contains(intake.route) ? intake.route : ""
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

    /// Adds `batch` to the log in the batch's transaction, as `writer`.
    static func record(_ batch: [Intake], _ db: any SQLSession, writer: String) throws {
        var counts: [Key: (arrivals: Int, last: String)] = [:]
        for intake in batch {
            guard let key = key(of: intake) else { continue }
            let entry = counts[key] ?? (0, intake.receivedAtText)
            counts[key] = (entry.arrivals + 1, max(entry.last, intake.receivedAtText))
        }
        for (key, entry) in counts {
            try db.execute(upsertSQL, [key.day, key.app, key.family, key.version, key.adNetwork, key.channel, key.outcome, key.environment,
                                       writer, entry.arrivals, entry.last])
        }
    }

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
