import Foundation
import JWS
import Postback

/// Postback-level reconciliation, which no MMP offers: a network gives the postback identifiers (AdAttributionKit
/// `postback-identifier`, SKAdNetwork `transaction-id`) it claims, and Countersign says for each whether a verified
/// copy is stored, only a refused or unverifiable one, or nothing; and which verified postbacks of the network it did
/// not claim.
public struct PostbackReconciliation: Sendable {
    let engine: any DatabaseEngine

    /// What became of one claimed identifier.
    public enum Status: String, Sendable, CaseIterable {
        case verified
        case unverifiableOnly = "unverifiable_only"
        case failedOnly = "failed_only"
        case unknown
        case notClaimed = "not_claimed"

        /// What the status means, in an analyst's words (docs/metrics.md, `reconcile --help`).
        public var definition: String {
            switch self {
            case .verified: "A copy Apple signed is stored (counted says whether it counts)."
            case .unverifiableOnly: "Only a copy nobody can verify yet is stored (a key or version Countersign does not know); it does not count until reverify proves it."
            case .failedOnly: "Only refused copies arrived: a bad signature, a malformed body; the receipt keeps what the body claimed."
            case .unknown: "Nothing with this identifier arrived."
            case .notClaimed: "Verified for the network, received in the range asked, but not in its list."
            }
        }
    }

    /// The most identifiers one request reconciles.
    public static let maximumIdentifiers = 1_000_000

    /// One row per claimed identifier (in the order given, each once whatever its case) and one per identifier of the
    /// verified postbacks of `adNetwork` received in `from..<to` (of `app` when given) that the list leaves out:
    /// `identifier`, `status`, `postbacks` (stored postbacks it found: SKAdNetwork has one per window), `counted` (of
    /// those, how many count).
    public func reconcile(identifiers: [String], adNetwork: String?, app: AppID?, from: Date?, to: Date?) async throws -> ReportTable {
        var order: [String] = []
        var position: [String: Int] = [:]
        for identifier in identifiers where position[identifier.lowercased()] == nil {
            position[identifier.lowercased()] = order.count
            order.append(identifier)
        }
        let positions = position, claimed = order
        let found = try await engine.read { db in
            var stored = [(postbacks: Int, counted: Int, verified: Bool)?](repeating: nil, count: claimed.count)
            var failed = [Bool](repeating: false, count: claimed.count)
            // The dedup keys of the identifiers as given are made by the database from one list and looked up in the
            // unique index (AdAttributionKit's, and SKAdNetwork's of every window); then, for those not found, the keys
            // in Apple's case (upper for AdAttributionKit, lower for SKAdNetwork); then, for those still not found, the
            // refused bodies that claimed them. A row is taken once, by its own identifier.
            var seen = Set<String>()
            var missing = claimed
            for otherCase in [false, true] where !missing.isEmpty {
                for row in try db.rows(Self.storedSQL(db.dialect, otherCase: otherCase), [Self.argument(missing, db.dialect)], reuse: .once) {
                    guard seen.insert(try row.get("dedup_key", as: String.self)).inserted,
                          let index = positions[try row.get("postback_identifier", as: String.self).lowercased()] else { continue }
                    if let adNetwork, try row.get("ad_network_id", as: String.self) != adNetwork { continue }
                    var entry = stored[index] ?? (0, 0, false)
                    entry.postbacks += 1
                    if try row.get("countable", as: Bool.self) { entry.counted += 1 }
                    if try row.get("outcome", as: String.self) == "verified" { entry.verified = true }
                    stored[index] = entry
                }
                missing = missing.filter { stored[positions[$0.lowercased()]!] == nil }
            }
            if !missing.isEmpty {
                for row in try db.rows("""
                    \(Self.identifiers(db.dialect)), claims(c) AS (SELECT id FROM ids UNION ALL SELECT upper(id) FROM ids WHERE upper(id) <> id
                        UNION ALL SELECT lower(id) FROM ids WHERE lower(id) <> id)
                    SELECT r.claimed_id FROM claims JOIN receipts r ON r.claimed_id = claims.c
                    """, [Self.argument(missing, db.dialect)], reuse: .once) {
                    if let index = positions[try row.get("claimed_id", as: String.self).lowercased()] { failed[index] = true }
                }
            }
            var unclaimed: [(identifier: String, postbacks: Int, counted: Int)] = []
            if let adNetwork {
                var conditions = ["ad_network_id = ?", "outcome = 'verified'"]
                var arguments: [any SQLValueConvertible] = [adNetwork]
                if let app { conditions.append("advertised_item_id = ?"); arguments.append(app) }
                if let from { conditions.append("received_at >= ?"); arguments.append(Timestamp.format(from)) }
                if let to { conditions.append("received_at < ?"); arguments.append(Timestamp.format(to)) }
                var listed: [String: Int] = [:]
                for row in try db.rows("SELECT postback_identifier, countable FROM postbacks WHERE \(conditions.joined(separator: " AND ")) ORDER BY id",
                                       arguments, reuse: .once) {
                    let identifier = try row.get("postback_identifier", as: String.self)
                    guard positions[identifier.lowercased()] == nil else { continue }
                    let counted = try row.get("countable", as: Bool.self) ? 1 : 0
                    if let index = listed[identifier] {
                        unclaimed[index].postbacks += 1
                        unclaimed[index].counted += counted
                    } else {
                        listed[identifier] = unclaimed.count
                        unclaimed.append((identifier, 1, counted))
                    }
                }
            }
            return (stored, failed, unclaimed)
        }
        var rows: [[JSONValue]] = order.indices.map { index in
            let entry = found.0[index]
            let status: Status = if entry?.verified == true { .verified } else if entry != nil { .unverifiableOnly }
                else if found.1[index] { .failedOnly } else { .unknown }
            return [.string(order[index]), .string(status.rawValue), .number(String(entry?.postbacks ?? 0)), .number(String(entry?.counted ?? 0))]
        }
        for postback in found.2 {
            rows.append([.string(postback.identifier), .string(Status.notClaimed.rawValue), .number(String(postback.postbacks)), .number(String(postback.counted))])
        }
        return ReportTable(columns: ["identifier", "status", "postbacks", "counted"], rows: rows)
    }

    /// The stored postbacks whose dedup key is one an identifier of the list can have, in the case given or (with
    /// `otherCase`) in Apple's. On SQLite one range of the unique index covers SKAdNetwork's windows 0 to 2 (keys
    /// compare byte by byte; an identifier is a UUID, so nothing else falls between); PostgreSQL's text order follows
    /// a collation, so there each window's key is looked up.
    private static func storedSQL(_ dialect: SQLDialect, otherCase: Bool) -> String {
        let aak = otherCase ? "upper(id)" : "id", skan = otherCase ? "lower(id)" : "id"
        let aakOnly = otherCase ? " WHERE upper(id) <> id" : "", skanOnly = otherCase ? " WHERE lower(id) <> id" : ""
        let columns = "p.dedup_key, p.postback_identifier, p.outcome, p.countable, p.ad_network_id"
        switch dialect {
        case .sqlite:
            return """
                \(identifiers(dialect)), keys(low, high) AS (
                    SELECT 'aak:' || \(aak), 'aak:' || \(aak) FROM ids\(aakOnly)
                    UNION ALL SELECT 'skan:' || \(skan) || ':0', 'skan:' || \(skan) || ':2' FROM ids\(skanOnly))
                SELECT \(columns) FROM keys JOIN postbacks p ON p.dedup_key BETWEEN keys.low AND keys.high
                """
        case .postgres:
            return """
                \(identifiers(dialect)), keys(k) AS (
                    SELECT 'aak:' || \(aak) FROM ids\(aakOnly)
                    UNION ALL SELECT 'skan:' || \(skan) || ':' || w FROM ids, (VALUES (0), (1), (2)) AS windows(w)\(skanOnly))
                SELECT \(columns) FROM keys JOIN postbacks p ON p.dedup_key = keys.k
                """
        }
    }

    /// A common table `ids(id)` of the identifiers, bound as one argument: a JSON array on SQLite, a text array on
    /// PostgreSQL.
    private static func identifiers(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: "WITH ids(id) AS (SELECT value FROM json_each(?))"
        case .postgres: "WITH ids(id) AS (SELECT unnest(?::text[]))"
        }
    }

    /// The argument ``identifiers(_:)`` reads.
    private static func argument(_ identifiers: [String], _ dialect: SQLDialect) -> any SQLValueConvertible {
        switch dialect {
        case .sqlite: JSONValue.array(identifiers.map { .string($0) }).serialized
        case .postgres: SQLArray(element: .text, values: identifiers.map { .text($0) })
        }
    }
}
