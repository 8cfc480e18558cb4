import Foundation
import Postback

/// The copies of already stored postbacks in one batch, judged together (issue 28): one read of their rows and one
/// write of every counter and kept receipt, whatever their number, instead of three statements (three round trips on
/// PostgreSQL) per copy. The dispositions are exactly those of the copies judged one per transaction in batch order:
/// a copy later in the batch meets the row as the copies before it left it.
///
/// On PostgreSQL the rows are read `FOR UPDATE` in id order, so receivers racing on the same postbacks judge its copies
/// one at a time and always lock in the same order; then the rollup rows their counters move are locked in key order
/// (``Rollup/postgresLockForCopies``), the order the fold takes them in, so two receivers' commits do not deadlock on them.
/// One case is left out of that order: a copy that replaces a folded row moves the rollup row of the row's new key too,
/// which is locked when it is met. That is rare (a verified copy of an unverifiable postback), and should it deadlock,
/// PostgreSQL breaks the deadlock after a second and the batch runs again. A copy that replaces its row (the first verified copy of an
/// unverifiable one, ``Disposition/forCopy(existingOutcome:existingHash:incoming:incomingHash:)``) is rare and
/// written when it is met, with its decoding and forwarding entries.
struct CopyJudgement {
    /// One copy: what came in, and the receipt the batch inserted for it.
    struct Copy {
        let intake: Intake
        let row: PostbackRow
        let postback: Postback
        let receiptID: Int64
    }

    /// A stored row as the next copy meets it.
    struct StoredRow: Equatable {
        let id: Int64
        var outcome: String
        var contentHash: Data
        /// Duplicates, replays and unverified copies counted so far.
        var copies: Int64
    }

    /// Counter increments of one row.
    struct Increments: Equatable {
        var duplicates: Int64 = 0
        var replays: Int64 = 0
        var unverifiedCopies: Int64 = 0
    }

    /// A copy's receipt, kept with its disposition and the row it is a copy of.
    struct KeptReceipt: Equatable {
        let receiptID: Int64
        let disposition: Disposition
        let postbackID: Int64
    }

    /// What is written after the judgement: increments by row, receipts kept, receipts dropped.
    struct Writes: Equatable {
        var increments: [Int64: Increments] = [:]
        var kept: [KeptReceipt] = []
        var dropped: [Int64] = []

        var isEmpty: Bool { increments.isEmpty && kept.isEmpty && dropped.isEmpty }
    }

    /// Judges one copy against the row it meets, with no I/O: the disposition, and the row and writes as the next copy
    /// meets them. `.stored` means the copy replaces the row; the caller writes the replacement.
    static func judge(incoming: VerificationOutcome, incomingHash: Data, receiptID: Int64, stored: inout StoredRow, writes: inout Writes) -> Disposition {
        let disposition = Disposition.forCopy(existingOutcome: stored.outcome, existingHash: stored.contentHash, incoming: incoming, incomingHash: incomingHash)
        switch disposition {
        case .stored:
            stored.outcome = incoming.rawValue
            stored.contentHash = incomingHash
        case .duplicate, .replay, .unverifiedCopy, .rejected:
            var increments = writes.increments[stored.id] ?? Increments()
            switch disposition {
            case .duplicate: increments.duplicates += 1
            case .unverifiedCopy: increments.unverifiedCopies += 1
            default: increments.replays += 1
            }
            writes.increments[stored.id] = increments
            // Enough copies are kept to see what was sent; past that a copy moves only the row's counters.
            if stored.copies < PostbackLedger.copiesKept {
                writes.kept.append(KeptReceipt(receiptID: receiptID, disposition: disposition, postbackID: stored.id))
            } else {
                writes.dropped.append(receiptID)
            }
            stored.copies += 1
        }
        return disposition
    }

    /// Reads the copies' rows, judges each copy in order, writes replacements as they are met and then every counter and
    /// receipt; returns each copy's disposition, in order.
    static func persist(_ copies: [Copy], _ db: any SQLSession, schemas: SchemaCatalog.Snapshot, now: Date) throws -> [Disposition] {
        guard !copies.isEmpty else { return [] }
        var stored = try rows(Array(Set(copies.map(\.postback.dedupKey))), db)
        if db.dialect == .postgres {
            // Answered with the first write after it: the locks are taken in order before any write, without a wait.
            _ = try db.rowsAhead(Rollup.postgresLockForCopies, [SQLArray(element: .bigint, values: stored.values.map { .integer($0.id) })], reuse: .prepared)
        }
        var writes = Writes()
        var dispositions: [Disposition] = []
        for copy in copies {
            let key = copy.postback.dedupKey
            guard var row = stored[key] else { throw LedgerInconsistency(dedupKey: key) }
            let disposition = judge(incoming: copy.intake.result.outcome, incomingHash: copy.row.contentHash, receiptID: copy.receiptID,
                                    stored: &row, writes: &writes)
            stored[key] = row
            if disposition == .stored {
                // A verified copy replaces one that is not (unverifiable, or found invalid by `reverify`), so a forgery
                // under an unknown kid can never block the real postback.
                try copy.row.update(db, id: row.id, receiptID: copy.receiptID)
                try EventWriter.decode(db, rowID: row.id, postback: copy.postback, receivedAt: copy.intake.receivedAt, schemas: schemas)
                try ForwardingOutbox.enqueue(db, postbackID: row.id, now: now)
            }
            dispositions.append(disposition)
        }
        try write(writes, db)
        return dispositions
    }

    /// The stored rows of `keys`, by dedup key: PostgreSQL in one statement, locked in id order; SQLite (one writer,
    /// no round trips) one key at a time.
    private static func rows(_ keys: [String], _ db: any SQLSession) throws -> [String: StoredRow] {
        let found: [SQLRow]
        switch db.dialect {
        case .postgres:
            found = try db.rows(postgresRowsSQL, [SQLArray(element: .text, values: keys.map(SQLValue.text))], reuse: .prepared)
        case .sqlite:
            found = try keys.flatMap { try db.rows(sqliteRowSQL, [$0], reuse: .cached) }
        }
        var rows: [String: StoredRow] = [:]
        for row in found {
            rows[try row.get("dedup_key", as: String.self)] = StoredRow(
                id: try row.get("id"), outcome: try row.get("outcome"), contentHash: try row.get("content_hash"), copies: try row.get("copies"))
        }
        return rows
    }

    private static let selectedColumns = "id, dedup_key, outcome, content_hash, duplicates + replays + unverified_copies AS copies"
    private static let sqliteRowSQL = "SELECT \(selectedColumns) FROM postbacks WHERE dedup_key = ?"
    private static let postgresRowsSQL = "SELECT \(selectedColumns) FROM postbacks WHERE dedup_key = ANY(?::text[]) ORDER BY id FOR UPDATE"

    /// Writes the counters and receipts: PostgreSQL in one statement of arrays, SQLite a statement per row.
    private static func write(_ writes: Writes, _ db: any SQLSession) throws {
        guard !writes.isEmpty else { return }
        let increments = writes.increments.sorted { $0.key < $1.key }
        switch db.dialect {
        case .postgres:
            func array(_ element: SQLArray.Element, _ values: [SQLValue]) -> SQLArray { SQLArray(element: element, values: values) }
            _ = try db.rows(postgresWriteSQL, [
                array(.bigint, increments.map { .integer($0.key) }),
                array(.bigint, increments.map { .integer($0.value.duplicates) }),
                array(.bigint, increments.map { .integer($0.value.replays) }),
                array(.bigint, increments.map { .integer($0.value.unverifiedCopies) }),
                array(.bigint, writes.kept.map { .integer($0.receiptID) }),
                array(.text, writes.kept.map { .text($0.disposition.rawValue) }),
                array(.bigint, writes.kept.map { .integer($0.postbackID) }),
                array(.bigint, writes.dropped.map(SQLValue.integer)),
            ], reuse: .prepared)
        case .sqlite:
            for (id, counts) in increments {
                try db.execute(sqliteCountSQL, [counts.duplicates, counts.replays, counts.unverifiedCopies, id])
            }
            for kept in writes.kept { try db.execute(sqliteKeepSQL, [kept.disposition.rawValue, kept.postbackID, kept.receiptID]) }
            for receiptID in writes.dropped { try db.execute(sqliteDropSQL, [receiptID]) }
        }
    }

    private static let sqliteCountSQL =
        "UPDATE postbacks SET duplicates = duplicates + ?, replays = replays + ?, unverified_copies = unverified_copies + ? WHERE id = ?"
    private static let sqliteKeepSQL = "UPDATE receipts SET disposition = ?, postback_id = ? WHERE id = ?"
    private static let sqliteDropSQL = "DELETE FROM receipts WHERE id = ?"
    /// The counters (one row of increments per postback), the kept receipts and the dropped ones, in one statement.
    private static let postgresWriteSQL = "WITH counted AS (UPDATE postbacks p SET duplicates = p.duplicates + c.duplicates, replays = p.replays + c.replays, "
        + "unverified_copies = p.unverified_copies + c.unverified FROM unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[]) "
        + "AS c(id, duplicates, replays, unverified) WHERE p.id = c.id), "
        + "kept AS (UPDATE receipts r SET disposition = k.disposition, postback_id = k.postback_id "
        + "FROM unnest(?::bigint[], ?::text[], ?::bigint[]) AS k(id, disposition, postback_id) WHERE r.id = k.id) "
        + "DELETE FROM receipts WHERE id = ANY(?::bigint[])"
}
