import Foundation
import JWS
import Postback

/// Alerts: the rules, each check that reads their figures and queues an alert when one starts or stops firing (or a
/// digest is due), and the outbox of alerts to deliver, with the forwarding outbox's guarantees: queued in the same
/// transaction as the state it reports, claimed with leases shared by every receiver, retried with backoff until
/// ``AlertRule/maximumAge``, bounded per rule, visible in ``status(now:)``.
public struct AlertBook: Sendable {
    let engine: any DatabaseEngine

    /// What a change to the rules could not do.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// A new rule beyond ``AlertRule/maximumRules``.
        case tooManyRules(maximum: Int)

        public var description: String {
            switch self {
            case .tooManyRules(let maximum): "there are \(maximum) alert rules, the most allowed; remove one first"
            }
        }
    }

    // MARK: Rules

    /// Adds or replaces `rule`. A rule replaced with the same condition (kind, filters, window, threshold and minimum)
    /// keeps its state, so setting rules again from a file doubles nothing; one whose condition changed starts afresh,
    /// and if it was firing a resolution is queued for that firing. The day of its last digest is kept.
    public func set(_ rule: AlertRule, now: Date = Date()) async throws {
        try AlertRule.check(rule)
        try await engine.write { db in
            let count = try db.value("SELECT count(*) FROM alert_rules WHERE name <> ?", [rule.name], as: Int.self) ?? 0
            guard count < AlertRule.maximumRules else { throw Refusal.tooManyRules(maximum: AlertRule.maximumRules) }
            let existing = try Self.rules(db, named: rule.name).first
            let alike = existing.map { $0.judgedAlike(rule) } ?? false
            if let existing, !alike,
               let since = try db.value("SELECT firing_since FROM alert_rules WHERE name = ? AND firing = 1", [rule.name], as: String?.self) ?? nil {
                _ = try Self.queue(db, AlertEvent(rule: rule.name, kind: existing.kind, state: .resolved, key: "resolved:\(since)", at: now,
                                                  summary: "The rule was changed; it is judged afresh from now on.", figures: JSONObject()), now: now)
            }
            try db.execute("""
                INSERT INTO alert_rules (name, kind, url, format, app, ad_network_id, partner, hours, threshold, minimum, hour, time_zone, currency, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, url = excluded.url, format = excluded.format, app = excluded.app,
                    ad_network_id = excluded.ad_network_id, partner = excluded.partner, hours = excluded.hours, threshold = excluded.threshold,
                    minimum = excluded.minimum, hour = excluded.hour, time_zone = excluded.time_zone, currency = excluded.currency,
                    updated_at = excluded.updated_at,
                    firing = CASE WHEN ? = 1 THEN alert_rules.firing ELSE 0 END,
                    firing_since = CASE WHEN ? = 1 THEN alert_rules.firing_since END
                """, [rule.name, rule.kind.rawValue, rule.url, rule.format.rawValue, rule.app, rule.adNetwork, rule.partner, rule.hours,
                      rule.threshold, rule.minimum, rule.hour, rule.timeZone, rule.currency, Timestamp.format(now), alike ? 1 : 0, alike ? 1 : 0])
        }
    }

    /// Every rule, by name.
    public func rules() async throws -> [AlertRule] {
        try await engine.read { db in try Self.rules(db) }
    }

    static func rules(_ db: any SQLSession, named name: String? = nil) throws -> [AlertRule] {
        try db.rows("""
            SELECT name, kind, url, format, app, ad_network_id, partner, hours, threshold, minimum, hour, time_zone, currency, updated_at
            FROM alert_rules WHERE (? = '' OR name = ?) ORDER BY name
            """, [name ?? "", name ?? ""]).compactMap { row in
            guard let kind = AlertKind(rawValue: try row.get("kind")) else { return nil }
            var rule = AlertRule(name: try row.get("name"), kind: kind, url: try row.get("url"),
                                 format: AlertRule.Format(rawValue: try row.get("format")) ?? .json, adNetwork: try row.get("ad_network_id"),
                                 partner: try row.get("partner"), minimum: try row.get("minimum"), hour: try row.get("hour"),
                                 timeZone: try row.get("time_zone"), currency: try row.get("currency"), updatedAt: try row.get("updated_at"))
            rule.app = (try row.get("app", as: Int64?.self)).map { AppID($0) }
            rule.hours = try row.get("hours")
            rule.threshold = try row.get("threshold")
            return rule
        }
    }

    /// Removes the rule `name` with its undelivered alerts; returns how many alerts went with it, or nil when there is
    /// no such rule.
    public func remove(_ name: String) async throws -> Int? {
        try await engine.write { db in
            guard try db.row("SELECT 1 FROM alert_rules WHERE name = ?", [name]) != nil else { return nil }
            try db.execute("DELETE FROM alert_rules WHERE name = ?", [name])
            return try db.execute("DELETE FROM alert_outbox WHERE rule = ?", [name])
        }
    }

    // MARK: Checking

    /// What `rule` reads now and whether it fires, without queueing anything (`countersign alerts check`). A digest
    /// rule reads yesterday's digest.
    public func reading(_ rule: AlertRule, now: Date = Date()) async throws -> AlertReading {
        if rule.kind == .digest {
            let zone = ReportTimeZone(identifier: rule.timeZone) ?? .utc
            let event = try await digest(rule, day: AlertTransition.yesterday(in: zone.zone, now: now), now: now)
            return AlertReading(firing: true, summary: event.summary, figures: event.figures)
        }
        return try await figures(rule, now: now).reading(for: rule, now: now)
    }

    /// Checks every rule at `now` and queues what changed: an alert when a rule starts or stops firing, a digest when
    /// one is due. Receivers may check at once: the rule's state moves by compare-and-set, and each occurrence has a
    /// key of its own, so an alert is queued once. Returns the alerts this call queued. A rule whose figures cannot be
    /// read is skipped (and tried at the next check); the error is rethrown after the others were checked.
    @discardableResult
    public func check(now: Date = Date()) async throws -> [AlertEvent] {
        var queued: [AlertEvent] = []
        var failure: (any Error)?
        for rule in try await rules() {
            do {
                queued += try await check(rule, now: now)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return queued
    }

    /// One rule's check: the alerts it queued.
    func check(_ rule: AlertRule, now: Date) async throws -> [AlertEvent] {
        let stamp = Timestamp.format(now)
        if rule.kind == .digest {
            let last = try await engine.read { db in try db.value("SELECT last_digest_day FROM alert_rules WHERE name = ?", [rule.name], as: String?.self) }
            let days = AlertTransition.digestDays(rule: rule, lastDigestDay: last ?? nil, now: now)
            guard let newest = days.last else { return [] }
            var made: [AlertEvent] = []
            for day in days { made.append(try await digest(rule, day: day, now: now)) }
            let events = made
            return try await engine.write { db in
                let moved = try db.execute("""
                    UPDATE alert_rules SET last_digest_day = ?, last_checked_at = ?, last_summary = ?
                    WHERE name = ? AND updated_at = ? AND (last_digest_day IS NULL OR last_digest_day < ?)
                    """, [newest, stamp, events.last?.summary, rule.name, rule.updatedAt, newest])
                guard moved > 0 else { return [] }
                return try events.filter { try Self.queue(db, $0, now: now) }
            }
        }
        let reading = try await figures(rule, now: now).reading(for: rule, now: now)
        return try await engine.write { db in
            guard let row = try db.row("SELECT firing, firing_since, last_digest_day FROM alert_rules WHERE name = ? AND updated_at = ?",
                                       [rule.name, rule.updatedAt]) else { return [] }
            let state = AlertTransition.State(firing: try row.get("firing", as: Int.self) != 0, since: try row.get("firing_since"),
                                              lastDigestDay: try row.get("last_digest_day"))
            let (next, event) = AlertTransition.after(reading, rule: rule, state: state, now: now)
            // Compare-and-set: another receiver that moved the state first, or a change to the rule, makes this one a
            // plain check.
            let moved = try db.execute("""
                UPDATE alert_rules SET firing = ?, firing_since = ?, last_checked_at = ?, last_summary = ?
                WHERE name = ? AND updated_at = ? AND firing = ? AND coalesce(firing_since, '') = ?
                """, [next.firing ? 1 : 0, next.since, stamp, reading.summary, rule.name, rule.updatedAt, state.firing ? 1 : 0, state.since ?? ""])
            guard moved > 0, let event else { return [] }
            return try Self.queue(db, event, now: now) ? [event] : []
        }
    }

    /// Queues `event` in the caller's transaction, as JSON (the rule's format is made from it when it is sent), unless
    /// its rule holds ``AlertRule/maximumEntries`` undelivered alerts (then it is counted as dropped); false when it was
    /// not queued.
    static func queue(_ db: any SQLSession, _ event: AlertEvent, now: Date) throws -> Bool {
        let held = try db.value("SELECT count(*) FROM alert_outbox WHERE rule = ?", [event.rule], as: Int.self) ?? 0
        guard held < AlertRule.maximumEntries else {
            try db.execute("UPDATE alert_rules SET dropped = dropped + 1 WHERE name = ?", [event.rule])
            return false
        }
        let moment = now.timeIntervalSince1970
        return try db.execute("""
            INSERT INTO alert_outbox (rule, event_key, body, created_at, deadline, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (rule, event_key) DO NOTHING
            """, [event.rule, event.key, Data(event.body(.json)), Timestamp.format(now), moment + AlertRule.maximumAge, moment]) > 0
    }

    /// The figures `rule` is judged on at `now`.
    func figures(_ rule: AlertRule, now: Date) async throws -> AlertFigures {
        let app = rule.app?.number ?? 0, network = rule.adNetwork ?? ""
        let since = Timestamp.format(now.addingTimeInterval(-(rule.hours ?? 0) * 3600))
        // The winning, counted, first-window installs of the rule's app and network.
        let installs = """
            countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'
            AND (? = 0 OR advertised_item_id = ?) AND (? = '' OR ad_network_id = ?)
            """
        switch rule.kind {
        case .silence:
            let lookback = String(Timestamp.format(now.addingTimeInterval(-35 * 86_400)).prefix(10))
            let last = try await engine.read { db in
                try db.value("""
                    SELECT max(last_received_at) FROM arrivals_daily
                    WHERE day >= ? AND outcome = 'verified' AND environment = 'production' AND (? = 0 OR app = ?) AND (? = '' OR ad_network_id = ?)
                    """, [lookback, app, app, network, network], as: String?.self)
            }
            return .silence(lastArrival: (last ?? nil).flatMap { Timestamp.parse($0) })
        case .untrustedShare:
            return try await engine.read { db in
                let stored = try db.row("""
                    SELECT count(*) AS whole, coalesce(sum(CASE WHEN outcome = 'unverifiable' THEN 1 ELSE 0 END), 0) AS part
                    FROM postbacks WHERE received_at >= ?
                    """, [since])
                let refused = try db.row("""
                    SELECT count(*) AS whole, coalesce(sum(CASE WHEN outcome IN ('invalid', 'unverifiable') THEN 1 ELSE 0 END), 0) AS part
                    FROM receipts WHERE disposition <> 'stored' AND received_at >= ?
                    """, [since])
                func count(_ row: SQLRow?, _ column: String) throws -> Int { try row?.get(column, as: Int.self) ?? 0 }
                return .share(part: try count(stored, "part") + count(refused, "part"), whole: try count(stored, "whole") + count(refused, "whole"))
            }
        case .nullShare:
            return try await engine.read { db in
                let row = try db.row("""
                    SELECT count(*) AS whole, coalesce(sum(CASE WHEN conversion_value IS NULL AND coarse_value IS NULL THEN 1 ELSE 0 END), 0) AS part
                    FROM postbacks WHERE received_at >= ? AND \(installs)
                    """, [since, app, app, network, network])
                return .share(part: try row?.get("part", as: Int.self) ?? 0, whole: try row?.get("whole", as: Int.self) ?? 0)
            }
        case .valueMix:
            let before = Timestamp.format(now.addingTimeInterval(-8 * (rule.hours ?? 0) * 3600))
            return try await engine.read { db in
                var recent: [String: Int] = [:], earlier: [String: Int] = [:]
                for row in try db.rows("""
                    SELECT CASE WHEN received_at >= ? THEN 1 ELSE 0 END AS recent,
                           coalesce('fine ' || CAST(conversion_value AS TEXT), 'coarse ' || coarse_value, 'none') AS label, count(*) AS installs
                    FROM postbacks WHERE received_at >= ? AND \(installs)
                    GROUP BY 1, 2
                    """, [since, before, app, app, network, network]) {
                    let (label, count) = (try row.get("label", as: String.self), try row.get("installs", as: Int.self))
                    if try row.get("recent", as: Int.self) == 1 { recent[label] = count } else { earlier[label] = count }
                }
                return .valueMix(recent: recent, before: earlier)
            }
        case .deadLetters:
            let partner = rule.partner ?? ""
            let count = try await engine.read { db in
                try db.value("SELECT count(*) FROM forward_outbox WHERE state = 'dead' AND (? = '' OR partner = ?)", [partner, partner], as: Int.self)
            }
            return .deadLetters(count ?? 0)
        case .claimGap:
            var query = PerformanceQuery()
            let today = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
            query.from = today.addingTimeInterval(-11 * 86_400)
            query.to = today.addingTimeInterval(-4 * 86_400)
            query.app = rule.app
            query.adNetwork = rule.adNetwork
            query.asOf = now
            let table = try await PerformanceReader(engine: engine).report(query)
            func total(_ column: String) -> Int {
                guard let index = table.columns.firstIndex(of: column) else { return 0 }
                return table.rows.reduce(0) { $0 + Int($1[index].int64 ?? 0) }
            }
            let day = { (date: Date) in String(Timestamp.format(date).prefix(10)) }
            return .claimGap(claimed: total("claimed_installs"), verified: total("installs"), from: day(query.from!), to: day(query.to!))
        case .digest:
            preconditionFailure("a digest has no figures; check(_:now:) makes it")
        }
    }

    /// The digest of `day` for `rule`: performance by ad network on the arrival basis.
    func digest(_ rule: AlertRule, day: String, now: Date) async throws -> AlertEvent {
        var query = PerformanceQuery()
        let zone = ReportTimeZone(identifier: rule.timeZone) ?? .utc
        query.timeZone = zone
        query.from = Timestamp.parse(day, assuming: zone.zone)
        query.to = query.from?.addingTimeInterval(36 * 3600)
        query.to = query.to.flatMap { Timestamp.parse(query.day($0), assuming: zone.zone) }
        query.app = rule.app
        query.adNetwork = rule.adNetwork
        query.groupBy = [.adNetwork]
        query.currency = rule.currency
        query.basis = .arrival
        query.asOf = now
        return AlertDigest.event(rule: rule, day: day, table: try await PerformanceReader(engine: engine).report(query), now: now)
    }

    // MARK: Delivering

    /// Claims at most `limit` alerts due at `now`, oldest first, for one attempt each (made in the rule's format and
    /// sent to its URL as they are now), and of each rule only its oldest pending alert, so a rule's alerts arrive in the order they happened (a resolution never before its firing). The
    /// claim lapses after twice the delivery timeout, so an alert whose receiver died is delivered again, with the same
    /// idempotency key.
    public func claim(limit: Int, now: Date = Date()) async throws -> [AlertDelivery] {
        let claimID = UUID().uuidString, moment = now.timeIntervalSince1970
        return try await engine.write { db in
            let ids = try db.rows("""
                UPDATE alert_outbox SET claim_id = ?, claimed_until = ?
                WHERE state = 'pending' AND (claimed_until IS NULL OR claimed_until < ?)
                    AND id IN (SELECT o.id FROM alert_outbox o
                             WHERE o.state = 'pending' AND o.next_attempt_at <= ? AND (o.claimed_until IS NULL OR o.claimed_until < ?)
                                 AND NOT EXISTS (SELECT 1 FROM alert_outbox e WHERE e.rule = o.rule AND e.state = 'pending' AND e.id < o.id)
                             ORDER BY o.next_attempt_at, o.id LIMIT ?)
                RETURNING id
                """, [claimID, moment + 2 * AlertRule.timeout + 1, moment, moment, moment, limit])
            guard !ids.isEmpty else { return [] }
            return try db.rows("""
                SELECT o.id, o.rule, o.event_key, o.body, o.attempts, o.deadline, r.url, r.format
                FROM alert_outbox o JOIN alert_rules r ON r.name = o.rule WHERE o.claim_id = ? ORDER BY o.next_attempt_at, o.id
                """, [claimID]).map { row in
                // The rule's URL and format as they are now: a rule moved to another webhook or format sends so.
                let stored = Array(try row.get("body", as: Data.self))
                let format = AlertRule.Format(rawValue: try row.get("format")) ?? .json
                let body = format == .json ? stored : AlertEvent(json: stored)?.body(format) ?? stored
                return AlertDelivery(id: try row.get("id"), rule: try row.get("rule"), key: try row.get("event_key"), url: try row.get("url"),
                                     body: body, attempts: try row.get("attempts"),
                                     deadline: Date(timeIntervalSince1970: try row.get("deadline")), claimID: claimID)
            }
        }
    }

    /// When the next pending alert is due, if any.
    public func nextDue() async throws -> Date? {
        try await engine.read { db in
            try db.value("SELECT min(next_attempt_at) FROM alert_outbox WHERE state = 'pending'", as: Double?.self)
        }.flatMap { $0 }.map { Date(timeIntervalSince1970: $0) }
    }

    /// Records a delivery the webhook accepted. False when the claim had lapsed.
    @discardableResult
    public func delivered(_ delivery: AlertDelivery, now: Date = Date()) async throws -> Bool {
        try await engine.write { db in
            guard try db.execute("DELETE FROM alert_outbox WHERE id = ? AND claim_id = ?", [delivery.id, delivery.claimID]) > 0 else { return false }
            try db.execute("UPDATE alert_rules SET delivered = delivered + 1, last_delivered_at = ? WHERE name = ?", [Timestamp.format(now), delivery.rule])
            return true
        }
    }

    /// Records a failed attempt and what the schedule decided. False when the claim had lapsed.
    @discardableResult
    public func failed(_ delivery: AlertDelivery, answer: String, error: String, decision: ForwardingSchedule.Decision, now: Date = Date()) async throws -> Bool {
        let (state, next) = decision.entry(now: now)
        return try await engine.write { db in
            guard try db.execute("""
                UPDATE alert_outbox SET attempts = attempts + 1, state = ?, next_attempt_at = ?, claim_id = NULL, claimed_until = NULL,
                    last_attempt_at = ?, last_answer = ?, last_error = ?
                WHERE id = ? AND claim_id = ?
                """, [state.rawValue, next, Timestamp.format(now), answer, String(error.prefix(500)), delivery.id, delivery.claimID]) > 0 else { return false }
            // Kept on the rule too, so the status shows the last failure after the alert was delivered.
            try db.execute("UPDATE alert_rules SET last_answer = ?, last_error = ? WHERE name = ?", [answer, String(error.prefix(500)), delivery.rule])
            return true
        }
    }

    /// Puts the dead alerts of `rule` (every rule when nil) back in the queue, due now, with a fresh deadline. Returns
    /// how many, or nil when no rule is named `rule`.
    public func retry(rule: String?, now: Date = Date()) async throws -> Int? {
        let moment = now.timeIntervalSince1970
        return try await engine.write { db in
            if let rule, try db.row("SELECT 1 FROM alert_rules WHERE name = ?", [rule]) == nil { return nil }
            return try db.execute("""
                UPDATE alert_outbox SET state = 'pending', next_attempt_at = ?, deadline = ? WHERE state = 'dead' AND (? = '' OR rule = ?)
                """, [moment, moment + AlertRule.maximumAge, rule ?? "", rule ?? ""])
        }
    }

    // MARK: Operators

    /// One row per rule: its kind, whether it fires and since when, the last check and what it found, alerts pending
    /// (and of those in flight), dead, delivered and dropped, the last delivery and the last failed attempt (kept after
    /// a later success).
    public func status(now: Date = Date()) async throws -> ReportTable {
        let columns = ["rule", "kind", "url", "firing", "firing_since", "last_checked_at", "last_summary", "pending", "in_flight", "dead",
                       "delivered", "dropped", "last_delivered_at", "last_answer", "last_error"]
        let rows = try await engine.read { db in
            try db.rows("""
                SELECT r.name, r.kind, r.url, r.firing, r.firing_since, r.last_checked_at, r.last_summary,
                       (SELECT count(*) FROM alert_outbox o WHERE o.rule = r.name AND o.state = 'pending'),
                       (SELECT count(*) FROM alert_outbox o WHERE o.rule = r.name AND o.state = 'pending' AND o.claimed_until >= ?),
                       (SELECT count(*) FROM alert_outbox o WHERE o.rule = r.name AND o.state = 'dead'),
                       r.delivered, r.dropped, r.last_delivered_at, r.last_answer, r.last_error
                FROM alert_rules r ORDER BY r.name
                """, [now.timeIntervalSince1970]).map { row in
                var cells = row.values.map(ReportTable.cell)
                if case .string(let url) = cells[2] { cells[2] = .string(AlertRule.shown(url)) }
                cells[3] = .bool(cells[3] == .number("1"))
                return cells
            }
        }
        return ReportTable(columns: columns, rows: rows)
    }
}
