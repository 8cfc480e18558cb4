import Foundation
import JWS
import Postback

/// Forwarding: the rules, the outbox that is written in the same transaction as each postback it relays, claims with
/// leases and per-partner limits shared by every receiver, and what operators read and retry.
public struct ForwardingOutbox: Sendable {
    let engine: any DatabaseEngine

    // MARK: Rules

    /// What a change to the rules could not do.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// A new rule beyond the most rules allowed.
        case tooManyRules(maximum: Int)
        /// The rule still holds undelivered entries (pending or dead) and they were not to be dropped.
        case undeliveredEntries(Int)
        /// The rule names a template that does not exist.
        case noSuchTemplate(String)
        /// A test delivery found no stored postback the rule matches.
        case nothingToTest(String)
        /// The rule sends a secret and its URL moves to another host without the header given again.
        case secretNeedsHeader

        public var description: String {
            switch self {
            case .tooManyRules(let maximum): "there are \(maximum) forwarding rules, the most allowed; remove one, or raise --forward-max-rules"
            case .undeliveredEntries(let count): "the rule holds \(count) undelivered entries; deliver or retry them first, or remove it with drop_entries=true (CLI: --drop-entries)"
            case .noSuchTemplate(let name): "no delivery template is named \(name); countersign forward templates lists them"
            case .nothingToTest(let name): "no verified postback the rule \(name) matches is among the newest \(ForwardingOutbox.testWindow) stored; a test sends the newest one, so send one first"
            case .secretNeedsHeader: "the rule sends a partner's secret and its URL names another host now; give the header again (CLI: --header and --secret-file) or remove it (header: null, --no-header)"
            }
        }
    }

    /// Adds or replaces `rule`; it applies to postbacks stored from now on (and its template and header to every
    /// delivery from now on). `header` keeps, removes or sets the partner's header and secret; the rule's own `header`
    /// is ignored. With `keepTemplate`, a rule that exists keeps its template (a new one takes `rule.template`). A new
    /// rule is refused when `maximumRules` rules exist (each rule costs every verified postback an outbox row), a rule
    /// naming a template that does not exist is refused, and so is moving a rule that sends a secret to another host
    /// without the header given again (the secret would go to a host it was not given for).
    public func set(_ rule: ForwardRule, header: PartnerHeader.Change = .keep, keepTemplate: Bool = false,
                    maximumRules: Int = ForwardRule.defaultMaximumRules) async throws {
        try ForwardRule.check(rule)
        let now = Timestamp.format(Date())
        try await engine.write { db in
            let count = try db.value("SELECT count(*) FROM forward_rules WHERE name <> ?", [rule.name], as: Int.self) ?? 0
            guard count < maximumRules else { throw Refusal.tooManyRules(maximum: maximumRules) }
            let existing = try db.row("SELECT url, template, header_name FROM forward_rules WHERE name = ?", [rule.name])
            var rule = rule
            if keepTemplate, let existing { rule.template = try existing.get("template", as: String.self) }
            guard try DeliveryTemplateStore.load(db, name: rule.template) != nil else { throw Refusal.noSuchTemplate(rule.template) }
            if header == .keep, let existing, try existing.get("header_name", as: String?.self) != nil,
               URLComponents(string: try existing.get("url", as: String.self))?.host?.lowercased() != URLComponents(string: rule.url)?.host?.lowercased() {
                throw Refusal.secretNeedsHeader
            }
            _ = try db.execute("""
                INSERT INTO forward_rules (name, url, ad_network_id, app, protocol, environment, concurrency, rate, max_age, timeout, max_entries, template, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET url = excluded.url, ad_network_id = excluded.ad_network_id, app = excluded.app,
                    protocol = excluded.protocol, environment = excluded.environment, concurrency = excluded.concurrency,
                    rate = excluded.rate, max_age = excluded.max_age, timeout = excluded.timeout, max_entries = excluded.max_entries,
                    template = excluded.template, updated_at = excluded.updated_at
                """, [rule.name, rule.url, rule.adNetwork, rule.app, rule.postbackProtocol?.rawValue, rule.environment.rawValue,
                      rule.concurrency, rule.rate, rule.maximumAge, rule.timeout, rule.maximumEntries, rule.template, now])
            switch header {
            case .keep: break
            case .remove:
                try db.execute("UPDATE forward_rules SET header_name = NULL WHERE name = ?", [rule.name])
                try db.execute("DELETE FROM forward_secrets WHERE rule = ?", [rule.name])
            case .set(let header):
                try db.execute("UPDATE forward_rules SET header_name = ? WHERE name = ?", [header.name, rule.name])
                try db.execute("""
                    INSERT INTO forward_secrets (rule, value, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT (rule) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    """, [rule.name, header.value, now])
            }
        }
    }

    /// Every rule, by name.
    public func rules() async throws -> [ForwardRule] {
        try await engine.read { db in
            try db.rows("SELECT name, url, ad_network_id, app, protocol, environment, concurrency, rate, max_age, timeout, max_entries, template, header_name, updated_at FROM forward_rules ORDER BY name", []).map { row in
                ForwardRule(name: try row.get("name"), url: try row.get("url"), adNetwork: try row.get("ad_network_id"), app: try row.get("app"),
                            postbackProtocol: (try row.get("protocol", as: String?.self)).flatMap(PostbackProtocol.init(rawValue:)),
                            environment: ForwardRule.Environment(rawValue: try row.get("environment")) ?? .production,
                            concurrency: try row.get("concurrency"), rate: try row.get("rate"), maximumAge: try row.get("max_age"),
                            timeout: try row.get("timeout"), maximumEntries: try row.get("max_entries"), template: try row.get("template"),
                            header: try row.get("header_name"), updatedAt: try row.get("updated_at"))
            }
        }
    }

    /// Removes the rule `name`; returns how many undelivered entries went with it, or nil when there is no such rule.
    /// A rule with undelivered entries is removed only with `dropEntries` (each is a postback a partner has not got).
    public func remove(_ name: String, dropEntries: Bool) async throws -> Int? {
        try await engine.write { db in
            guard try db.row("SELECT 1 FROM forward_rules WHERE name = ?", [name]) != nil else { return nil }
            let entries = try db.value("SELECT count(*) FROM forward_outbox WHERE partner = ?", [name], as: Int.self) ?? 0
            guard entries == 0 || dropEntries else { throw Refusal.undeliveredEntries(entries) }
            try db.execute("DELETE FROM forward_rules WHERE name = ?", [name])
            try db.execute("DELETE FROM forward_secrets WHERE rule = ?", [name])
            return try db.execute("DELETE FROM forward_outbox WHERE partner = ?", [name])
        }
    }

    /// A rule that filled up or found room again.
    public struct CapacityChange: Sendable, Equatable {
        public let partner: String
        /// Whether it is full now.
        public let full: Bool
        /// Entries it holds.
        public let entries: Int
        /// Since when it is, or was, full.
        public let fullSince: String?
    }

    /// Marks the rules that hold `max_entries` entries full (new postbacks are not queued for them) and those with room
    /// again not full; returns what changed. A count over the outbox, run by the forwarder every few seconds.
    public func checkCapacity(now: Date = Date()) async throws -> [CapacityChange] {
        let rows = try await engine.read { db in
            try db.rows("""
                SELECT r.name, r.max_entries, r.is_full, r.full_since, (SELECT count(*) FROM forward_outbox o WHERE o.partner = r.name) AS entries
                FROM forward_rules r ORDER BY r.name
                """, [])
        }
        var changes: [CapacityChange] = []
        for row in rows {
            let (name, maximum, full, entries) = (try row.get("name", as: String.self), try row.get("max_entries", as: Int.self),
                                                  try row.get("is_full", as: Bool.self), try row.get("entries", as: Int.self))
            guard full != (entries >= maximum) else { continue }
            let since = full ? try row.get("full_since", as: String?.self) : Timestamp.format(now)
            try await engine.write { db in
                if full {
                    try db.execute("UPDATE forward_rules SET is_full = 0 WHERE name = ?", [name])
                } else {
                    try db.execute("UPDATE forward_rules SET is_full = 1, full_since = ? WHERE name = ?", [since, name])
                }
            }
            changes.append(CapacityChange(partner: name, full: !full, entries: entries, fullSince: since))
        }
        return changes
    }

    /// Queues for the rule `partner` the verified postbacks it matches that were stored at or after `since` and are not
    /// queued for it yet, oldest first, as many as its `max_entries` leaves room for; returns how many, or nil when no
    /// rule is named `partner`. For postbacks stored while the rule was full (or before it existed).
    public func backfill(partner: String, since: Date, now: Date = Date()) async throws -> Int? {
        try await engine.write { db in
            guard let rule = try db.row("SELECT max_entries, (SELECT count(*) FROM forward_outbox o WHERE o.partner = ?) AS entries FROM forward_rules WHERE name = ?",
                                        [partner, partner]) else { return nil }
            let room = try rule.get("max_entries", as: Int.self) - rule.get("entries", as: Int.self)
            guard room > 0 else { return 0 }
            return try db.execute("""
                INSERT INTO forward_outbox (partner, postback_id, created_at, deadline, next_attempt_at)
                SELECT r.name, p.id, ?, ? + r.max_age, ? FROM postbacks p JOIN forward_rules r ON \(Self.matches(row: "p"))
                WHERE r.name = ? AND p.received_at >= ?
                    AND NOT EXISTS (SELECT 1 FROM forward_outbox o WHERE o.partner = r.name AND o.postback_id = p.id)
                ORDER BY p.id LIMIT ?
                ON CONFLICT (partner, postback_id) DO NOTHING
                """, Self.insertArguments(now: now) + [partner, Timestamp.format(since), room])
        }
    }

    // MARK: Writing the outbox, inside the ledger's transaction

    /// Which rules match a postback row `p` (rule `r`): verified, and every filter the rule sets. The one statement of the
    /// forwarding rule; both the per-row and the batch insert use it. PostgreSQL's `ingest_batch` (migration v17) holds
    /// it in its frozen text: a change here needs a migration that replaces it.
    static func matches(row p: String) -> String {
        """
        \(p).outcome = 'verified' AND (r.ad_network_id IS NULL OR r.ad_network_id = \(p).ad_network_id)
        AND (r.app IS NULL OR r.app = \(p).advertised_item_id) AND (r.protocol IS NULL OR r.protocol = \(p).protocol)
        AND (r.environment = 'any' OR r.environment = \(p).environment)
        """
    }

    /// The entries for the rows of `source` (a table or a `WITH` part with the postbacks' columns, named `p`), for every
    /// matching rule that is not full:
    /// arguments are the creation time (text) and now (epoch seconds) twice.
    static func insertSQL(from source: String, where condition: String) -> String {
        """
        INSERT INTO forward_outbox (partner, postback_id, created_at, deadline, next_attempt_at)
        SELECT r.name, p.id, ?, ? + r.max_age, ? FROM \(source) p JOIN forward_rules r ON \(matches(row: "p")) AND r.is_full = 0
        WHERE \(condition)
        ON CONFLICT (partner, postback_id) DO NOTHING
        """
    }

    /// The arguments of ``insertSQL(from:where:)`` for `now`.
    static func insertArguments(now: Date) -> [any SQLValueConvertible] {
        [Timestamp.format(now), now.timeIntervalSince1970, now.timeIntervalSince1970]
    }

    /// Queues the postback `postbackID` for every matching rule, in the caller's transaction: nothing is forwarded that is
    /// not stored, and nothing stored is left unforwarded. A postback is queued once per rule, however often this runs.
    static func enqueue(_ db: any SQLSession, postbackID: Int64, now: Date) throws {
        try db.execute(enqueueSQL, insertArguments(now: now) + [postbackID])
    }

    private static let enqueueSQL = insertSQL(from: "postbacks", where: "p.id = ?")

    // MARK: Delivering

    /// A rule with entries to deliver, as the forwarder sees it on each round.
    public struct Queue: Sendable, Equatable {
        public let partner: String
        public let concurrency: Int
        /// When the earliest unclaimed pending entry falls due; nil when none waits.
        public let nextDue: Date?
    }

    /// Every rule with when its next unclaimed entry falls due (a read; an idle outbox never takes the writer).
    public func queues(now: Date) async throws -> [Queue] {
        let moment = now.timeIntervalSince1970
        return try await engine.read { db in
            try db.rows(Self.queuesSQL, [moment]).map { row in
                Queue(partner: try row.get("name"), concurrency: try row.get("concurrency"),
                      nextDue: (try row.get("due", as: Double?.self)).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    /// Every rule with when its earliest unclaimed pending entry falls due (argument: now, epoch seconds): the entry
    /// found by walking the partner's due index from its start (`ORDER BY ... LIMIT 1`, which no planner's estimate
    /// turns into a count of the whole backlog, as `min()` was on PostgreSQL before its statistics were gathered).
    static let queuesSQL = """
        SELECT r.name, r.concurrency,
               (SELECT o.next_attempt_at FROM forward_outbox o
                WHERE o.partner = r.name AND o.state = 'pending' AND (o.claimed_until IS NULL OR o.claimed_until < ?)
                ORDER BY o.next_attempt_at LIMIT 1) AS due
        FROM forward_rules r ORDER BY r.name
        """

    /// Takes up to a number of a partner's due, unclaimed entries for a claim, oldest due first (arguments: the claim's
    /// id, until when it holds, the partner, now twice, how many): read in the order of the partner's due index,
    /// `(partner, next_attempt_at, id)`, so a claim reads what it takes, whatever the backlog.
    static let claimSQL = """
        UPDATE forward_outbox SET claim_id = ?, claimed_until = ?
        WHERE id IN (SELECT id FROM forward_outbox
                     WHERE partner = ? AND state = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)
                     ORDER BY next_attempt_at, id LIMIT ?)
        RETURNING id
        """

    /// Claims up to `limit` due entries of `partner`, within the partner's limits across every receiver: no more than its
    /// concurrency in flight (live claims), and no more than its rate allows (a token bucket kept on the rule's row, which
    /// each claim locks, so receivers claim for one partner one at a time). A claim lasts twice the rule's timeout plus a
    /// second, so it only lapses when its holder died; the entry is then claimed again and delivered again with the same
    /// idempotency key.
    public func claim(partner: String, limit: Int, now: Date) async throws -> [ForwardDelivery] {
        let claimID = UUID().uuidString
        let moment = now.timeIntervalSince1970
        // An enriched template's bodies need a read of the postbacks' facts, made here, in the claim: one statement
        // in the claim's transaction, without a thread hop or a transaction of its own. A failure undoes the claim.
        // The transaction is held through it: on SQLite the one writer (ingest's batches wait about 0.1 ms a claim of
        // eight), on PostgreSQL the rule's row (receivers claiming for the same partner wait about a millisecond). The
        // bodies are made after it ends, so neither is held while they are.
        let claim = try await engine.write { db -> Materials in
            let lock = db.dialect == .postgres ? " FOR UPDATE" : ""
            guard let rule = try db.row("""
                SELECT r.url, r.concurrency, r.rate, r.timeout, r.tokens, r.tokens_at, r.template, r.header_name, s.value AS secret
                FROM forward_rules r LEFT JOIN forward_secrets s ON s.rule = r.name WHERE r.name = ?\(lock.isEmpty ? "" : lock + " OF r")
                """, [partner]) else {
                return .empty
            }
            let (url, concurrency, rate, timeout) = (try rule.get("url", as: String.self), try rule.get("concurrency", as: Int.self),
                                                     try rule.get("rate", as: Double.self), try rule.get("timeout", as: Double.self))
            let busy = try db.value(Self.liveClaimsSQL, [partner, moment], as: Int.self) ?? 0
            let elapsed = max(0, moment - (try rule.get("tokens_at", as: Double.self)))
            let tokens = min(max(1, rate), try rule.get("tokens", as: Double.self) + elapsed * rate)
            let wanted = min(limit, concurrency - busy, Int(tokens.rounded(.down)))
            var claimed: [Int64] = []
            if wanted > 0 {
                claimed = try db.rows(Self.claimSQL, [claimID, moment + 2 * timeout + 1, partner, moment, moment, wanted]).map { try $0.get("id", as: Int64.self) }
            }
            try db.execute("UPDATE forward_rules SET tokens = ?, tokens_at = ? WHERE name = ?", [tokens - Double(claimed.count), moment, partner])
            guard !claimed.isEmpty else { return .empty }
            let header: PartnerHeader? = if let name = try rule.get("header_name", as: String?.self), let secret = try rule.get("secret", as: String?.self) {
                PartnerHeader(stored: name, value: secret)
            } else { nil }
            let entries = try db.rows(Self.claimedEntriesSQL(count: claimed.count), claimed).map { row in
                ClaimedEntry(delivery: ForwardDelivery(
                    id: try row.get("id"), partner: partner, url: url, timeout: timeout, postbackID: try row.get("postback_id"),
                    dedupKey: try row.get("dedup_key"), body: Array(try row.get("body", as: Data.self)), header: header, attempts: try row.get("attempts"),
                    deadline: Date(timeIntervalSince1970: try row.get("deadline")), claimID: claimID), remoteAddress: try row.get("remote_address"))
            }
            let template = try rule.get("template", as: String.self)
            if template == DeliveryTemplate.original { return Materials(entries: entries, template: nil, facts: [:]) }
            return try Self.materials(db, entries, template: template)
        }
        return claim.deliveries(test: false)
    }

    /// The entries a claim took, found by their ids (`count` of them; the claim id has no index, and looking for it
    /// read the whole outbox), oldest due first.
    static func claimedEntriesSQL(count: Int) -> String {
        """
        SELECT o.id, o.postback_id, o.attempts, o.deadline, p.dedup_key, r.body, r.remote_address
        FROM forward_outbox o JOIN postbacks p ON p.id = o.postback_id JOIN receipts r ON r.id = p.receipt_id
        WHERE o.id IN (\(Array(repeating: "?", count: count).joined(separator: ", "))) ORDER BY o.next_attempt_at, o.id
        """
    }

    /// How many of a partner's entries are claimed and not lapsed: read through `forward_outbox_claimed`, the live
    /// claims alone, whatever the partner's backlog.
    static let liveClaimsSQL = "SELECT count(*) FROM forward_outbox WHERE partner = ? AND state = 'pending' AND claimed_until >= ?"

    /// A claimed entry before its body is made, with where its postback came from.
    struct ClaimedEntry: Sendable {
        let delivery: ForwardDelivery
        let remoteAddress: String?
    }

    /// The rule's header and secret, when it sends one.
    static func header(_ db: any SQLSession, rule: String) throws -> PartnerHeader? {
        guard let row = try db.row("SELECT r.header_name, s.value FROM forward_rules r JOIN forward_secrets s ON s.rule = r.name WHERE r.name = ? AND r.header_name IS NOT NULL",
                                   [rule]),
              let name = try row.get("header_name", as: String?.self) else { return nil }
        return PartnerHeader(stored: name, value: try row.get("value", as: String.self))
    }

    /// Claimed entries with what their bodies are made from, read in the claim's (or the test's) session: their
    /// template and the postbacks' facts it needs. Nil `template` sends Apple's bodies as they are.
    struct Materials: Sendable {
        let entries: [ClaimedEntry]
        let template: DeliveryTemplate?
        let facts: [Int64: DeliveryFacts]

        /// No entries.
        static let empty = Materials(entries: [], template: nil, facts: [:])

        /// The deliveries with their bodies made by the template from the facts and where each postback came from;
        /// a test's are marked, `original`'s too.
        func deliveries(test: Bool) -> [ForwardDelivery] {
            guard template != nil || test else { return entries.map(\.delivery) }
            let template = template ?? DeliveryTemplate.originalTemplate
            var facts = facts
            return entries.map { entry in
                // Taken out of the dictionary, so adding the address changes it in place instead of copying it.
                var fact = facts.removeValue(forKey: entry.delivery.postbackID) ?? .none
                fact[.remoteAddress] = entry.remoteAddress.map { .string($0) }
                return entry.delivery.with(body: template.render(appleBody: entry.delivery.body, facts: fact, test: test))
            }
        }
    }

    /// What the bodies of `entries` are made from with the template `name` (a shipped one is at hand, a network's is
    /// read, its parse cached per revision): it and the postbacks' facts, cost included when it sends cost, read in the
    /// caller's session. A rule names only templates that exist (removing one that rules name is refused).
    static func materials(_ db: any SQLSession, _ entries: [ClaimedEntry], template name: String) throws -> Materials {
        guard !entries.isEmpty else { return .empty }
        let template = try DeliveryTemplateStore.load(db, name: name) ?? DeliveryTemplate.originalTemplate
        let facts = template.needsFacts ? try DeliveryFactsReader.facts(db, ids: entries.map(\.delivery.postbackID), withCost: template.usesCost) : [:]
        return Materials(entries: entries, template: template, facts: facts)
    }

    /// The longest a test delivery waits for the partner (or the rule's own timeout, when shorter).
    public static let testTimeout: TimeInterval = 5
    /// How many of the newest stored postbacks a test delivery looks through for one its rule matches.
    public static let testWindow = 100_000

    /// A test delivery for the rule `name`: the newest stored verified postback it matches, made by its template, marked
    /// as a test (`"countersign-test": true`) and keyed `test-` plus a fresh id so a partner never takes it for the real
    /// one, within ``testTimeout``. Nothing is queued or counted. Nil when there is no such rule.
    public func testDelivery(rule name: String) async throws -> ForwardDelivery? {
        let found = try await engine.read { db -> Materials?? in
            guard let rule = try db.row("SELECT url, timeout, template FROM forward_rules WHERE name = ?", [name]) else { return nil }
            guard let row = try db.row("""
                SELECT p.id, p.dedup_key, rc.body, rc.remote_address FROM postbacks p JOIN forward_rules r ON \(Self.matches(row: "p"))
                JOIN receipts rc ON rc.id = p.receipt_id
                WHERE r.name = ? AND p.id > (SELECT coalesce(max(id), 0) FROM postbacks) - ? ORDER BY p.id DESC LIMIT 1
                """, [name, Self.testWindow]) else { return .some(nil) }
            let delivery = ForwardDelivery(
                id: 0, partner: name, url: try rule.get("url"), timeout: min(Self.testTimeout, try rule.get("timeout", as: Double.self)), postbackID: try row.get("id"),
                dedupKey: "test-" + UUID().uuidString.lowercased(), body: Array(try row.get("body", as: Data.self)), header: try Self.header(db, rule: name),
                attempts: 0, deadline: Date(), claimID: "test")
            let entry = ClaimedEntry(delivery: delivery, remoteAddress: try row.get("remote_address"))
            return .some(try Self.materials(db, [entry], template: try rule.get("template", as: String.self)))
        }
        guard let found else { return nil }
        // The body is made after the read, as a claim's are.
        guard let delivery = found?.deliveries(test: true).first else { throw Refusal.nothingToTest(name) }
        return delivery
    }

    /// Records deliveries the partners accepted, in one transaction: each entry goes, each rule's delivered count grows
    /// by its own. Returns, for each delivery in order, false when its claim had lapsed (another attempt holds or
    /// finished the entry). ``DeliveryRecorder`` gathers the answers that arrive together into one call.
    public func delivered(_ deliveries: [ForwardDelivery], now: Date = Date()) async throws -> [Bool] {
        guard !deliveries.isEmpty else { return [] }
        let partners = Set(deliveries.map(\.partner)).sorted()
        return try await engine.write { db in
            // On PostgreSQL the rules' rows first, in name order, as a claim locks its rule's row before its entries.
            if db.dialect == .postgres {
                _ = try db.rows("SELECT name FROM forward_rules WHERE name = ANY(?::text[]) ORDER BY name FOR UPDATE",
                                [SQLArray(element: .text, values: partners.map { .text($0) })], reuse: .prepared)
            }
            let (sql, arguments, reuse) = Self.deleteDeliveredSQL(deliveries, db.dialect)
            // Each entry deleted, with the claim that held it (two attempts at one entry share its id).
            var deleted: [Int64: String] = [:]
            for row in try db.rows(sql, arguments, reuse: reuse) { deleted[try row.get("id", as: Int64.self)] = try row.get("claim_id", as: String.self) }
            var counts: [String: Int] = [:]
            let recorded = deliveries.map { delivery in
                let done = deleted[delivery.id] == delivery.claimID
                if done { counts[delivery.partner, default: 0] += 1 }
                return done
            }
            for partner in partners {
                guard let count = counts[partner] else { continue }
                try db.execute("UPDATE forward_rules SET delivered = delivered + ?, last_delivered_at = ? WHERE name = ?",
                               [count, Timestamp.format(now), partner])
            }
            return recorded
        }
    }

    /// One statement that deletes the entries of `deliveries` still held by their claims and returns their ids and
    /// claims: on PostgreSQL with the ids and claims as two arrays (one prepared text), on SQLite as a list of ids and
    /// one of pairs (each count's text kept compiled up to a rule's largest concurrency).
    static func deleteDeliveredSQL(_ deliveries: [ForwardDelivery], _ dialect: SQLDialect)
        -> (sql: String, arguments: [any SQLValueConvertible], reuse: StatementReuse) {
        if dialect == .postgres {
            return ("""
                DELETE FROM forward_outbox o USING unnest(?::bigint[], ?::text[]) AS d(id, claim_id)
                WHERE o.id = d.id AND o.claim_id = d.claim_id RETURNING o.id, o.claim_id
                """, [SQLArray(element: .bigint, values: deliveries.map { .integer($0.id) }),
                      SQLArray(element: .text, values: deliveries.map { .text($0.claimID) })], .prepared)
        }
        // The ids' list finds the rows by their key; the pairs alone (a row value against VALUES) made SQLite read the
        // whole outbox.
        let sql = "DELETE FROM forward_outbox WHERE id IN (" + Array(repeating: "?", count: deliveries.count).joined(separator: ", ")
            + ") AND (id, claim_id) IN (VALUES " + Array(repeating: "(?, ?)", count: deliveries.count).joined(separator: ", ") + ") RETURNING id, claim_id"
        return (sql, deliveries.map { $0.id as any SQLValueConvertible } + deliveries.flatMap { [$0.id, $0.claimID] as [any SQLValueConvertible] },
                deliveries.count <= ForwardRule.maximumConcurrency ? .cached : .once)
    }

    /// Records a failed attempt (`answer`: the status code, `timeout`, `refused` or `network`; `error`: what happened)
    /// and what the schedule decided. Returns false when the claim had lapsed.
    @discardableResult
    public func failed(_ delivery: ForwardDelivery, answer: String, error: String, decision: ForwardingSchedule.Decision, now: Date = Date()) async throws -> Bool {
        let (state, next) = decision.entry(now: now)
        return try await engine.write { db in
            try db.execute("""
                UPDATE forward_outbox SET attempts = attempts + 1, state = ?, next_attempt_at = ?, claim_id = NULL, claimed_until = NULL,
                    last_attempt_at = ?, last_answer = ?, last_error = ?
                WHERE id = ? AND claim_id = ?
                """, [state.rawValue, next, Timestamp.format(now), answer, String(error.prefix(500)), delivery.id, delivery.claimID]) > 0
        }
    }

    // MARK: Operators

    /// One row per rule: its URL, entries pending (and of those in flight), dead letters, deliveries made, the oldest
    /// pending entry, the next attempt, the last delivery and the last failure, the entries it may hold, and since when
    /// it is full (null while it has room).
    public func status(now: Date = Date()) async throws -> ReportTable {
        let columns = ["partner", "url", "pending", "in_flight", "dead", "delivered", "oldest_pending", "next_attempt_at", "last_delivered_at",
                       "last_answer", "last_error", "max_entries", "full_since"]
        let moment = now.timeIntervalSince1970
        let rows = try await engine.read { db in
            try db.rows("""
                SELECT r.name, r.url,
                       (SELECT count(*) FROM forward_outbox o WHERE o.partner = r.name AND o.state = 'pending'),
                       (SELECT count(*) FROM forward_outbox o WHERE o.partner = r.name AND o.state = 'pending' AND o.claimed_until >= ?),
                       (SELECT count(*) FROM forward_outbox o WHERE o.partner = r.name AND o.state = 'dead'),
                       r.delivered,
                       (SELECT min(o.created_at) FROM forward_outbox o WHERE o.partner = r.name AND o.state = 'pending'),
                       (SELECT \(db.dialect.isoTime(epochSeconds: "min(o.next_attempt_at)")) FROM forward_outbox o WHERE o.partner = r.name AND o.state = 'pending'),
                       r.last_delivered_at,
                       (SELECT o.last_answer FROM forward_outbox o WHERE o.partner = r.name AND o.last_attempt_at IS NOT NULL ORDER BY o.last_attempt_at DESC, o.id DESC LIMIT 1),
                       (SELECT o.last_error FROM forward_outbox o WHERE o.partner = r.name AND o.last_attempt_at IS NOT NULL ORDER BY o.last_attempt_at DESC, o.id DESC LIMIT 1),
                       r.max_entries, CASE WHEN r.is_full = 1 THEN r.full_since END
                FROM forward_rules r ORDER BY r.name
                """, [moment]).map { $0.values.map(ReportTable.cell) }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    /// Entries in `state` (of `partner`, or every partner), oldest first, at most `limit`: which postback, its dedup key,
    /// attempts, the last answer and error, and when it is tried next or was given up.
    public func entries(state: ForwardEntryState, partner: String?, limit: Int) async throws -> ReportTable {
        let columns = ["id", "partner", "postback_id", "dedup_key", "state", "attempts", "created_at", "last_attempt_at", "last_answer", "last_error",
                       "next_attempt_at", "deadline"]
        let rows = try await engine.read { db in
            try db.rows("""
                SELECT o.id, o.partner, o.postback_id, p.dedup_key, o.state, o.attempts, o.created_at, o.last_attempt_at, o.last_answer, o.last_error,
                       CASE WHEN o.state = 'pending' THEN \(db.dialect.isoTime(epochSeconds: "o.next_attempt_at")) END,
                       \(db.dialect.isoTime(epochSeconds: "o.deadline"))
                FROM forward_outbox o JOIN postbacks p ON p.id = o.postback_id
                WHERE o.state = ? AND (? = '' OR o.partner = ?) ORDER BY o.id LIMIT ?
                """, [state.rawValue, partner ?? "", partner ?? "", limit]).map { $0.values.map(ReportTable.cell) }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    /// Puts dead letters back in the queue, due now, with a fresh deadline of their rule's maximum age: those of `partner`
    /// (every partner when nil), or only the entries `ids`. Returns how many were put back, or nil when no rule is named
    /// `partner`.
    public func retry(partner: String?, ids: [Int64], now: Date = Date()) async throws -> Int? {
        let moment = now.timeIntervalSince1970
        return try await engine.write { db in
            if let partner, try db.row("SELECT 1 FROM forward_rules WHERE name = ?", [partner]) == nil { return nil }
            var condition = "state = 'dead' AND (? = '' OR partner = ?)"
            var arguments: [any SQLValueConvertible] = [moment, moment, partner ?? "", partner ?? ""]
            if !ids.isEmpty {
                condition += " AND id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))"
                arguments += ids
            }
            return try db.execute("""
                UPDATE forward_outbox SET state = 'pending', next_attempt_at = ?,
                    deadline = ? + (SELECT r.max_age FROM forward_rules r WHERE r.name = forward_outbox.partner)
                WHERE \(condition)
                """, arguments)
        }
    }
}
