import AdServices
import Foundation
import JWS
import Postback

/// Where a token job stands.
public enum TokenJobState: String, Sendable, CaseIterable {
    /// Received, not yet sent to Apple.
    case pending
    /// Sent at least once; Apple's answer calls for another try at `next_attempt_at`.
    case retrying
    /// Apple answered 200; the record (attribution true or false) is stored.
    case done
    /// Given up: `failure_reason` holds the ``TokenFailure`` code that says why.
    case failed
}

/// A token job claimed for one exchange attempt. Only the holder of `claimID` may record its outcome.
public struct TokenJob: Sendable, Equatable {
    /// The job's row id.
    public let id: Int64
    /// The token to send, exactly as the app sent it.
    public let token: String
    /// The caller's app and install ids, copied onto the record as sent (a token's app is not checked: Apple's record
    /// says which app it attributes).
    public let app: String?
    public let installID: String?
    /// The start of the token's 24-hour life: when the device made it, or else when Countersign received it.
    public let tokenCreatedAt: Date
    /// Attempts made so far, and of those how many were answered 404, and 5xx or a network error.
    public let attempts: Int
    public let notFoundAnswers: Int
    public let serverFailures: Int
    /// The claim this attempt holds; recording an outcome needs it.
    public let claimID: String
}

/// What one exchange attempt led to.
public enum TokenJobUpdate: Sendable {
    /// Apple answered 200 with this record (the response body is kept with it).
    case store(AttributionRecord, body: [UInt8])
    /// Try again after this many seconds.
    case retry(after: TimeInterval)
    /// Stop for this reason.
    case fail(TokenFailure)
}

/// What ``TokenJobQueue/enqueue(_:receivedAt:maximumOpen:)`` did for an already known token, or a new one.
public struct EnqueuedTokenJob: Sendable, Equatable {
    /// The job's row id.
    public let id: Int64
    /// Its state now (a new job is pending).
    public let state: TokenJobState
    /// False when the same token was already known: the existing job is returned and nothing new is queued.
    public let isNew: Bool
}

/// What offering a token to the queue did.
public enum TokenEnqueueResult: Sendable, Equatable {
    /// Stored (or already known): the job.
    case queued(EnqueuedTokenJob)
    /// Refused: `maximumOpen` jobs are already waiting, so a flood cannot delay genuine tokens without bound.
    case queueFull
}

/// AdServices token jobs: queued before the 202, claimed with leases, finished exactly once.
public struct TokenJobQueue: Sendable {
    let engine: any DatabaseEngine

    /// Stores a token as a pending job, durably, before the caller answers. A token already known returns its job; a new
    /// one is refused while `maximumOpen` jobs are pending or retrying. The token's hash is unique in the database, so
    /// the same token offered to two receivers at once is queued once.
    ///
    /// The token's 24-hour life counts from when the app says it made it, but never from later than now: a job can
    /// live at most 24 hours from when Countersign first saw it.
    public func enqueue(_ submission: TokenSubmission, receivedAt: Date = Date(), maximumOpen: Int) async throws -> TokenEnqueueResult {
        let hash = Data(sha256(Array(submission.token.utf8)))
        let createdAt = min(submission.tokenCreatedAt ?? receivedAt, receivedAt).timeIntervalSince1970
        return try await engine.write { db in
            func existing() throws -> TokenEnqueueResult? {
                try db.row("SELECT id, state FROM adservices_jobs WHERE token_sha256 = ?", [hash]).map { row in
                    .queued(EnqueuedTokenJob(id: try row.get("id"), state: TokenJobState(rawValue: try row.get("state")) ?? .pending, isNew: false))
                }
            }
            if let known = try existing() { return known }
            let open = try db.value("SELECT count(*) FROM adservices_jobs WHERE state IN ('pending', 'retrying')", as: Int.self) ?? 0
            guard open < maximumOpen else { return .queueFull }
            let id = try db.value("""
                INSERT INTO adservices_jobs (token, token_sha256, app, install_id, received_at, token_created_at, state, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT (token_sha256) DO NOTHING RETURNING id
                """, [submission.token, hash, submission.app, submission.installID, Timestamp.format(receivedAt), createdAt,
                      receivedAt.timeIntervalSince1970], as: Int64.self)
            guard let id else { return try existing() ?? .queueFull }
            return .queued(EnqueuedTokenJob(id: id, state: .pending, isNew: true))
        }
    }

    /// Claims up to `limit` jobs that are due at `now` and not claimed by a live lease, for `lease` seconds.
    /// A job is claimed by one caller at a time, so a token is never exchanged twice at once; on PostgreSQL, rows another
    /// receiver is claiming are skipped (`FOR UPDATE SKIP LOCKED`).
    public func claimDue(now: Date, limit: Int, lease: TimeInterval) async throws -> [TokenJob] {
        let claimID = UUID().uuidString
        let moment = now.timeIntervalSince1970
        return try await engine.write { db in
            let skipLocked = db.dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
            return try db.rows("""
                UPDATE adservices_jobs SET claim_id = ?, claimed_until = ?
                WHERE id IN (SELECT id FROM adservices_jobs
                             WHERE state IN ('pending', 'retrying') AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)
                             ORDER BY next_attempt_at LIMIT ?\(skipLocked))
                RETURNING id, token, app, install_id, token_created_at, attempts, not_found_answers, server_failures
                """, [claimID, moment + lease, moment, moment, limit]).map { row in
                TokenJob(id: try row.get("id"), token: try row.get("token"), app: try row.get("app"), installID: try row.get("install_id"),
                         tokenCreatedAt: Date(timeIntervalSince1970: try row.get("token_created_at")), attempts: try row.get("attempts"),
                         notFoundAnswers: try row.get("not_found_answers"), serverFailures: try row.get("server_failures"), claimID: claimID)
            }.sorted { $0.id < $1.id }
        }
    }

    /// Records one attempt's outcome for a claimed job: `answer` is what Apple said (`200`, `404`, `network`, ...), or
    /// nil when no request was made (the token had expired). Storing the record and closing the job happen in one transaction,
    /// and a job has at most one record, so a record is stored exactly once. Returns false when the claim was lost.
    @discardableResult
    public func finishAttempt(_ job: TokenJob, answer: String?, notFound: Bool, serverFailure: Bool,
                              update: TokenJobUpdate, now: Date = Date()) async throws -> Bool {
        let nowText = Timestamp.format(now)
        return try await engine.write { db in
            let lock = db.dialect == .postgres ? " FOR UPDATE" : ""
            guard try db.value("SELECT claim_id = ? AND state IN ('pending', 'retrying') FROM adservices_jobs WHERE id = ?\(lock)",
                               [job.claimID, job.id], as: Bool.self) == true else { return false }
            let attempted = answer != nil
            let counts: [any SQLValueConvertible] = [attempted ? 1 : 0, notFound ? 1 : 0, serverFailure ? 1 : 0, attempted ? nowText : nil, answer]
            let common = """
                attempts = attempts + ?, not_found_answers = not_found_answers + ?, server_failures = server_failures + ?,
                last_attempt_at = coalesce(?, last_attempt_at), last_answer = coalesce(?, last_answer), claim_id = NULL, claimed_until = NULL
                """
            switch update {
            case .store(let record, let body):
                let recordID = try AttributionRecordStore.insert(db, record, app: job.app, installID: job.installID, body: body, receivedAt: now, jobID: job.id)
                try db.execute("UPDATE adservices_jobs SET \(common), state = 'done', record_id = ?, finished_at = ?, token = NULL WHERE id = ?",
                               counts + [recordID, nowText, job.id])
            case .retry(let delay):
                try db.execute("UPDATE adservices_jobs SET \(common), state = 'retrying', next_attempt_at = ? WHERE id = ?",
                               counts + [now.timeIntervalSince1970 + delay, job.id])
            case .fail(let reason):
                try db.execute("UPDATE adservices_jobs SET \(common), state = 'failed', failure_reason = ?, finished_at = ?, token = NULL WHERE id = ?",
                               counts + [reason.code, nowText, job.id])
            }
            return true
        }
    }

    /// When the next open job falls due (its claim may still be live), or nil when none is open.
    public func nextDue() async throws -> Date? {
        try await engine.read { db in
            try db.value("SELECT min(\(db.dialect.greatest("next_attempt_at", "coalesce(claimed_until, 0)"))) FROM adservices_jobs WHERE state IN ('pending', 'retrying')",
                         as: Double.self)
        }.map(Date.init(timeIntervalSince1970:))
    }

    /// How many jobs are in each state.
    public func counts() async throws -> [TokenJobState: Int] {
        try await engine.read { db in
            var counts = Dictionary(uniqueKeysWithValues: TokenJobState.allCases.map { ($0, 0) })
            for row in try db.rows("SELECT state, count(*) AS jobs FROM adservices_jobs GROUP BY state", []) {
                if let state = TokenJobState(rawValue: try row.get("state")) { counts[state] = try row.get("jobs", as: Int.self) }
            }
            return counts
        }
    }

    /// Jobs in `states`, oldest first (newest first with `newestFirst`), as a table (the token itself is never listed).
    public func list(states: [TokenJobState], limit: Int, newestFirst: Bool = false) async throws -> ReportTable {
        let columns = ["id", "state", "app", "install_id", "received_at", "attempts", "last_answer", "last_attempt_at", "next_attempt_at",
                       "failure_reason", "record_id", "finished_at"]
        let placeholders = Array(repeating: "?", count: states.count).joined(separator: ", ")
        let rows = try await engine.read { db in
            try db.rows("""
                SELECT id, state, app, install_id, received_at, attempts, last_answer, last_attempt_at,
                       CASE WHEN state IN ('pending', 'retrying') THEN \(db.dialect.isoTime(epochSeconds: "next_attempt_at")) END,
                       failure_reason, record_id, finished_at
                FROM adservices_jobs WHERE state IN (\(placeholders)) ORDER BY id\(newestFirst ? " DESC" : "") LIMIT ?
                """, states.map(\.rawValue) + [limit]).map { $0.values.map(ReportTable.cell) }
        }
        return ReportTable(columns: columns, rows: rows)
    }
}
