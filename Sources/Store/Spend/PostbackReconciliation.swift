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

    /// Which of the network's verified postbacks a list may leave out (issue 49, finding 5: networks claim winning
    /// first-window conversions, never later windows or non-winning postbacks).
    public enum UnclaimedScope: String, Sendable, CaseIterable {
        /// Every verified postback (later windows and non-winning ones included).
        case all
        /// Winning first-window postbacks: installs and re-engagements, what a network claims.
        case winning
        /// Winning first-window installs only.
        case installs

        /// The conditions on `p` (the `postbacks` table).
        var sql: String? {
            switch self {
            case .all: nil
            case .winning: "p.did_win = 1 AND p.conversion_window = 0"
            case .installs: "p.did_win = 1 AND p.conversion_window = 0 AND p.conversion_class = 'install'"
            }
        }
    }

    /// The most identifiers one request reconciles.
    public static let maximumIdentifiers = 1_000_000

    /// The columns of every reconciliation: `conversion_class`, `did_win` (1 when any of its postbacks won) and
    /// `windows` (those stored, such as `0,1`) describe the identifier's stored postbacks, empty when none is stored.
    public static let columns = ["identifier", "status", "postbacks", "counted", "conversion_class", "did_win", "windows"]

    /// What the stored postbacks of one identifier add up to.
    struct Found {
        var postbacks = 0
        var counted = 0
        var verified = false
        var conversionClass: String?
        var didWin = false
        var windows = Set<Int>()

        /// Adds one stored postback of `row` (with `countable`, `conversion_class`, `did_win`, `conversion_window`).
        mutating func add(_ row: SQLRow) throws {
            postbacks += 1
            if try row.get("countable", as: Bool.self) { counted += 1 }
            if conversionClass == nil { conversionClass = try row.get("conversion_class", as: String?.self) }
            if try row.get("did_win", as: Bool.self) { didWin = true }
            windows.insert(try row.get("conversion_window", as: Int.self))
        }

        /// The row's cells after identifier and status.
        var cells: [JSONValue] {
            [.number(String(postbacks)), .number(String(counted)), conversionClass.map { .string($0) } ?? .null, .number(didWin ? "1" : "0"),
             .string(windows.sorted().map(String.init).joined(separator: ","))]
        }

        /// The cells of an identifier with nothing stored.
        static let none: [JSONValue] = [.number("0"), .number("0"), .null, .null, .null]
    }

    /// How much one step of a reconciliation takes, so that memory stays flat whatever the list's size (trust round 4,
    /// finding 3); tests make them small.
    public struct Sizes: Sendable {
        /// Bytes of an uploaded list read at a time.
        public let listSlice: Int
        /// The most identifiers a list may hold (duplicates included).
        public let maximumIdentifiers: Int
        /// Identifiers looked up in one read transaction.
        public let lookup: Int
        /// The network's postbacks read in one page while looking for those it did not claim.
        public let page: Int
        /// Bytes of the answer gathered before they are handed on (a row more at most).
        public let answer: Int

        /// The sizes the server uses: the list read 64 KiB at a time, 10,000 identifiers a transaction, pages of 10,000
        /// postbacks, the answer written 32 KiB at a time.
        public init(listSlice: Int = 64 * 1024, maximumIdentifiers: Int = PostbackReconciliation.maximumIdentifiers, lookup: Int = 10_000,
                    page: Int = 10_000, answer: Int = 32 * 1024) {
            self.listSlice = max(1, listSlice)
            self.maximumIdentifiers = maximumIdentifiers
            self.lookup = max(1, lookup)
            self.page = max(1, page)
            self.answer = max(1, answer)
        }
    }

    /// One row per claimed identifier (in the order given, each once whatever its case) and one per identifier of the
    /// verified postbacks of `adNetwork` received in `from..<to` (of `app` when given) that the list leaves out:
    /// `identifier`, `status`, `postbacks` (stored postbacks it found: SKAdNetwork has one per window), `counted` (of
    /// those, how many count). The whole table at once, for the CLI; the server streams it (``reconcile(_:adNetwork:app:from:to:unclaimed:into:sizes:write:)``).
    public func reconcile(identifiers: [String], adNetwork: String?, app: AppID?, from: Date?, to: Date?, unclaimed: UnclaimedScope = .all) async throws -> ReportTable {
        var claimed = ClaimedIdentifiers()
        for identifier in identifiers { claimed.insert(identifier) }
        var rows: [[JSONValue]] = []
        try await reconcile(claimed, adNetwork: adNetwork, app: app, from: from, to: to, unclaimed: unclaimed) { rows += $0 }
        return ReportTable(columns: Self.columns, rows: rows)
    }

    /// The reconciliation of `claimed` written into `sink` (made with ``columns``; a format with room for them ends with
    /// `counts`, the rows of each status) and handed to `write` about `sizes.answer` bytes at a time as the rows are
    /// found, so an answer of any size is never held whole. Ends when the rows end or `write` throws (the client went
    /// away: nothing more is read).
    public func reconcile<Sink: TableSink>(_ claimed: ClaimedIdentifiers, adNetwork: String?, app: AppID?, from: Date?, to: Date?,
                                           unclaimed: UnclaimedScope = .all, into sink: Sink, sizes: Sizes = Sizes(),
                                           write: ([UInt8]) async throws -> Void) async throws {
        var sink = sink
        var counts: [Status: Int] = [:]
        try await reconcile(claimed, adNetwork: adNetwork, app: app, from: from, to: to, unclaimed: unclaimed, sizes: sizes) { rows in
            for row in rows {
                sink.append(row)
                if case .string(let status) = row[1], let known = Status(rawValue: status) { counts[known, default: 0] += 1 }
                if sink.pendingCount >= sizes.answer { try await write(sink.take()) }
            }
        }
        sink.finish(extra: [Self.counts(counts)])
        let rest = sink.take()
        if !rest.isEmpty { try await write(rest) }
    }

    /// `counts`: how many rows have each status, every status named.
    public static func counts(_ counts: [Status: Int]) -> JSONMember {
        JSONMember(key: "counts", value: .object(JSONObject(Status.allCases.map {
            JSONMember(key: $0.rawValue, value: .number(String(counts[$0] ?? 0)))
        })))
    }

    /// The rows of ``reconcile(identifiers:adNetwork:app:from:to:)`` handed to `rows` a step at a time: the claimed
    /// identifiers `sizes.lookup` at a time, each step one read transaction; then, with `adNetwork`, the postbacks it
    /// did not claim, found by reading the network's verified postbacks in the range `sizes.page` at a time by id
    /// (among those that existed when the reading began). Each unclaimed identifier comes once, with every stored
    /// postback of it, where its first postback is read, so the order is the one a single reading gives: the list's,
    /// then the unclaimed by their first postback.
    public func reconcile(_ claimed: ClaimedIdentifiers, adNetwork: String?, app: AppID?, from: Date?, to: Date?, unclaimed: UnclaimedScope = .all,
                          sizes: Sizes = Sizes(), rows: ([[JSONValue]]) async throws -> Void) async throws {
        var cursor = ClaimedIdentifiers.Cursor()
        while true {
            let step = claimed.next(sizes.lookup, from: &cursor)
            if step.isEmpty { break }
            try await rows(try await lookUp(step, adNetwork: adNetwork, app: app))
        }
        guard let adNetwork else { return }
        let filter = UnclaimedFilter(adNetwork: adNetwork, app: app, from: from, to: to, scope: unclaimed)
        // The ids the reading covers: those of the postbacks that meet the filter now, found as the database sees best.
        guard let bounds = try await engine.read({ db -> (low: Int64, high: Int64)? in
            guard let row = try db.rows("SELECT min(p.id) AS low, max(p.id) AS high FROM postbacks p WHERE \(filter.sql(forcingIDOrder: false, db.dialect))",
                                        filter.arguments, reuse: .once).first,
                  let low = try row.get("low", as: Int64?.self), let high = try row.get("high", as: Int64?.self) else { return nil }
            return (low, high)
        }) else { return }
        var after = bounds.low - 1
        let page = sizes.page
        while after < bounds.high {
            let start = after
            let read = try await engine.read { db -> (rows: [[JSONValue]], last: Int64?) in
                try Self.unclaimedPage(db, claimed: claimed, filter: filter, after: start, upTo: bounds.high, page: page)
            }
            if !read.rows.isEmpty { try await rows(read.rows) }
            guard let last = read.last else { break }
            after = last
        }
    }

    /// The rows of `claimed` (distinct ignoring case, in order), looked up in one read transaction; with `app`, only
    /// that app's postbacks (and refused bodies that claimed it) are found, so a list never tells of another app's.
    private func lookUp(_ claimed: [String], adNetwork: String?, app: AppID?) async throws -> [[JSONValue]] {
        var position: [String: Int] = [:]
        for (index, identifier) in claimed.enumerated() where position[identifier.lowercased()] == nil {
            position[identifier.lowercased()] = index
        }
        let positions = position
        let found = try await engine.read { db in
            var stored = [Found?](repeating: nil, count: claimed.count)
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
                    if let app, try row.get("advertised_item_id", as: Int64?.self) != app.number { continue }
                    var entry = stored[index] ?? Found()
                    try entry.add(row)
                    if try row.get("outcome", as: String.self) == "verified" { entry.verified = true }
                    stored[index] = entry
                }
                missing = missing.filter { identifier in positions[identifier.lowercased()].map { stored[$0] == nil } ?? false }
            }
            if !missing.isEmpty {
                for row in try db.rows("""
                    \(Self.identifiers(db.dialect)), claims(c) AS (SELECT id FROM ids UNION ALL SELECT upper(id) FROM ids WHERE upper(id) <> id
                        UNION ALL SELECT lower(id) FROM ids WHERE lower(id) <> id)
                    SELECT r.claimed_id, r.claimed_app FROM claims JOIN receipts r ON r.claimed_id = claims.c
                    """, [Self.argument(missing, db.dialect)], reuse: .once) {
                    if let app, try row.get("claimed_app", as: Int64?.self) != app.number { continue }
                    if let index = positions[try row.get("claimed_id", as: String.self).lowercased()] { failed[index] = true }
                }
            }
            return (stored, failed)
        }
        return claimed.indices.map { index in
            let entry = found.0[index]
            let status: Status = if entry?.verified == true { .verified } else if entry != nil { .unverifiableOnly }
                else if found.1[index] { .failedOnly } else { .unknown }
            return [.string(claimed[index]), .string(status.rawValue)] + (entry?.cells ?? Found.none)
        }
    }

    /// The verified postbacks of a network received in a range (of an app when given): the postbacks a list may leave out.
    struct UnclaimedFilter: Sendable {
        let adNetwork: String
        let app: AppID?
        let from: Date?
        let to: Date?
        let scope: UnclaimedScope

        /// The conditions on `p` (the `postbacks` table). `forcingIDOrder` keeps SQLite from the indexes on
        /// `received_at` and `advertised_item_id` (a `+` before a column), so a page is read along the primary key from
        /// its cursor instead of the whole range being read and sorted again for every page.
        func sql(forcingIDOrder: Bool, _ dialect: SQLDialect) -> String {
            let plus = forcingIDOrder && dialect == .sqlite ? "+" : ""
            var conditions = ["p.ad_network_id = ?", "p.outcome = 'verified'"]
            if app != nil { conditions.append("\(plus)p.advertised_item_id = ?") }
            if from != nil { conditions.append("\(plus)p.received_at >= ?") }
            if to != nil { conditions.append("\(plus)p.received_at < ?") }
            if let scoped = scope.sql { conditions.append(scoped) }
            return conditions.joined(separator: " AND ")
        }

        /// The arguments of ``sql(forcingIDOrder:_:)``.
        var arguments: [any SQLValueConvertible] {
            var arguments: [any SQLValueConvertible] = [adNetwork]
            if let app { arguments.append(app) }
            if let from { arguments.append(Timestamp.format(from)) }
            if let to { arguments.append(Timestamp.format(to)) }
            return arguments
        }
    }

    /// One page of the unclaimed: the postbacks of `filter` with an id in `after...upTo`, at most `page` of them in id
    /// order; of their identifiers that `claimed` leaves out, a row for each whose first postback is in the page, with
    /// every postback of it (found by its dedup keys in the unique index); and the id to read on from, nil at the end.
    private static func unclaimedPage(_ db: any SQLSession, claimed: ClaimedIdentifiers, filter: UnclaimedFilter, after: Int64, upTo high: Int64,
                                      page: Int) throws -> (rows: [[JSONValue]], last: Int64?) {
        let postbacks = try db.rows("""
            SELECT p.id, p.postback_identifier FROM postbacks p WHERE \(filter.sql(forcingIDOrder: true, db.dialect)) AND p.id > ? AND p.id <= ?
            ORDER BY p.id LIMIT ?
            """, filter.arguments + [after, high, page], reuse: .once)
        // The unclaimed identifiers of the page, each with its first postback here.
        var firsts: [(identifier: String, id: Int64)] = []
        var unclaimed = Set<String>()
        for row in postbacks {
            let identifier = try row.get("postback_identifier", as: String.self)
            guard !unclaimed.contains(identifier), !claimed.contains(identifier) else { continue }
            unclaimed.insert(identifier)
            firsts.append((identifier, try row.get("id", as: Int64.self)))
        }
        var totals: [String: (first: Int64, found: Found)] = [:]
        if !firsts.isEmpty {
            var seen = Set<Int64>()
            let sql = storedSQL(db.dialect, otherCase: false, columns: "p.id, p.postback_identifier, p.countable, p.conversion_class, p.did_win, p.conversion_window",
                                where: filter.sql(forcingIDOrder: false, db.dialect))
            for row in try db.rows(sql, [argument(firsts.map { $0.identifier }, db.dialect)] + filter.arguments, reuse: .once) {
                let id = try row.get("id", as: Int64.self), identifier = try row.get("postback_identifier", as: String.self)
                guard unclaimed.contains(identifier), seen.insert(id).inserted else { continue }
                var total = totals[identifier] ?? (id, Found())
                total.first = min(total.first, id)
                try total.found.add(row)
                totals[identifier] = total
            }
        }
        let rows: [[JSONValue]] = firsts.compactMap { first in
            guard let total = totals[first.identifier], total.first == first.id else { return nil }
            return [.string(first.identifier), .string(Status.notClaimed.rawValue)] + total.found.cells
        }
        let last = try postbacks.count == page ? postbacks.last?.get("id", as: Int64.self) : nil
        return (rows, last)
    }

    /// The stored postbacks whose dedup key is one an identifier of the list can have, in the case given or (with
    /// `otherCase`) in Apple's: `columns` of `p`, and only those that meet `conditions` when given. On SQLite one range
    /// of the unique index covers SKAdNetwork's windows 0 to 2 (keys compare byte by byte; an identifier is a UUID, so
    /// nothing else falls between); PostgreSQL's text order follows a collation, so there each window's key is looked up.
    private static func storedSQL(_ dialect: SQLDialect, otherCase: Bool,
                                  columns: String = "p.dedup_key, p.postback_identifier, p.outcome, p.countable, p.ad_network_id, p.advertised_item_id, p.conversion_class, p.did_win, p.conversion_window",
                                  where conditions: String? = nil) -> String {
        let aak = otherCase ? "upper(id)" : "id", skan = otherCase ? "lower(id)" : "id"
        let aakOnly = otherCase ? " WHERE upper(id) <> id" : "", skanOnly = otherCase ? " WHERE lower(id) <> id" : ""
        let filter = conditions.map { " WHERE " + $0 } ?? ""
        switch dialect {
        case .sqlite:
            return """
                \(identifiers(dialect)), keys(low, high) AS (
                    SELECT 'aak:' || \(aak), 'aak:' || \(aak) FROM ids\(aakOnly)
                    UNION ALL SELECT 'skan:' || \(skan) || ':0', 'skan:' || \(skan) || ':2' FROM ids\(skanOnly))
                SELECT \(columns) FROM keys JOIN postbacks p ON p.dedup_key BETWEEN keys.low AND keys.high\(filter)
                """
        case .postgres:
            return """
                \(identifiers(dialect)), keys(k) AS (
                    SELECT 'aak:' || \(aak) FROM ids\(aakOnly)
                    UNION ALL SELECT 'skan:' || \(skan) || ':' || w FROM ids, (VALUES (0), (1), (2)) AS windows(w)\(skanOnly))
                SELECT \(columns) FROM keys JOIN postbacks p ON p.dedup_key = keys.k\(filter)
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
