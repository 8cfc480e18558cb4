import Foundation
import JWS
import Postback

/// The postback ledger: every body's receipt, postbacks deduplicated by Apple's keys with the replay and
/// first-verified-copy rules, decoding at ingest, reverify and redecode.
public struct PostbackLedger: Sendable {
    let engine: any DatabaseEngine
    let catalog: SchemaCatalog
    /// Receipt ids reserved ahead on PostgreSQL (unused on SQLite).
    let receiptIDs: ReceiptIDs
    /// The name this process writes its arrival counts under, and the counts not yet written (``ArrivalLog``).
    let arrivalWriter: String
    let arrivalTally: ArrivalTally

    /// Copies of one postback (duplicates, replays, unverified copies) whose receipts are kept; later copies are counted
    /// on the postback's row, not stored, so resending one postback cannot fill the disk.
    public static let copiesKept: Int64 = 100

    /// Persists a batch and returns each item's disposition, in order: on SQLite in one transaction; on PostgreSQL in
    /// one statement that commits itself, the copies of stored postbacks judged in a transaction after it
    /// (``persistCommitting(_:_:schemas:receiptIDs:expected:catalog:)``). It blocks the calling thread until the commit:
    /// ``GroupCommitWriter`` calls it from its own threads, each through its own `lane`, never from the cooperative pool.
    /// Throws ``PartlyStored`` when the statement stored part of the batch and the transaction of its copies failed.
    /// Its arrival counts join the tally, written with a later batch's transaction (``ArrivalLog``).
    public func persist(_ batch: [Intake], through lane: (any TransactionLane)? = nil) throws -> [Disposition] {
        let (catalog, receiptIDs, writer) = (self.catalog, self.receiptIDs, self.arrivalWriter)
        let counts = ArrivalLog.counts(batch)
        // The counts that have waited a second are written with this transaction, this batch's with them.
        let waited = arrivalTally.takeIfDue()
        var written = waited
        written?.add(counts)
        let flushing = written
        let lane = lane ?? EngineLane(engine: engine)
        // PostgreSQL first stores the batch in one statement that commits itself, all but the copies of stored postbacks,
        // which are judged in a transaction after it. A batch with arrival counts to write, and one with no catalogue
        // version to expect (`whole`), runs whole in a transaction.
        var committed: CommittedBatch?
        var whole = false
        do {
            // A batch decoded with a catalogue that changed meanwhile is rolled back and written again, the catalogue
            // reloaded first; uploads are rare, so the check costs no wait (``SchemaCatalog/forCommit(_:reloaded:)``).
            // What the statement committed is never written again.
            let dispositions = try SchemaCatalog.Changed.retrying(reload: { try lane.transaction { db in try catalog.refresh(db) } }) { reloaded in
                if committed == nil, !whole, flushing == nil, engine.dialect == .postgres {
                    committed = try lane.autocommit { db in
                        let (schemas, expected) = try catalog.forCommit(db, reloaded: reloaded)
                        return try Self.persistCommitting(batch, db, schemas: schemas, receiptIDs: receiptIDs, expected: expected, catalog: catalog)
                    }
                    whole = committed == nil
                }
                let held = committed.map { committed in batch.indices.filter { committed.dispositions[$0] == nil } } ?? Array(batch.indices)
                if let committed, held.isEmpty { return committed.dispositions.map { $0! } }
                let judged = try lane.transaction { db in
                    let (schemas, expected) = try catalog.forCommit(db, reloaded: reloaded)
                    let dispositions = try Self.persist(held.map { batch[$0] }, db, schemas: schemas, receiptIDs: receiptIDs,
                                                        held: committed.map { committed in held.map { committed.receiptIDs[$0] } },
                                                        confirm: expected.map { expected in { try catalog.confirm(expected: expected, found: $0) } })
                    if let flushing { try ArrivalLog.write(flushing, db, writer: writer) }
                    return dispositions
                }
                guard let committed else { return judged }
                var dispositions = committed.dispositions
                for (position, disposition) in zip(held, judged) { dispositions[position] = disposition }
                return dispositions.map { $0! }
            }
            if flushing == nil { arrivalTally.add(counts) }
            return dispositions
        } catch {
            // Only the counts that waited go back, and those of what the statement committed join the tally.
            if let waited { arrivalTally.giveBack(waited) }
            guard let committed else { throw error }
            arrivalTally.add(ArrivalLog.counts(batch.indices.filter { committed.dispositions[$0] != nil }.map { batch[$0] }))
            throw PartlyStored(dispositions: committed.dispositions, error: error)
        }
    }

    /// The statement stored part of a batch (each stored intake's disposition; nil for the copies it held), and the
    /// transaction of the copies failed with `error`: only the held ones failed.
    public struct PartlyStored: Error {
        /// `stored` or `rejected` for what was committed; nil for what failed.
        public let dispositions: [Disposition?]
        /// Why the held copies were not stored.
        public let error: any Error
    }

    /// First every body's receipt and, for a postback, its row unless the dedup key is taken, with its forwarding
    /// entries (``ForwardingOutbox``) when it is verified; then the copies of stored postbacks are judged together, in
    /// order (``CopyJudgement``): a copy later in the batch meets the row an earlier one inserted or replaced, exactly as
    /// if they had come one per transaction. On PostgreSQL the first statement also reads the catalogue's version under
    /// its shared lock and hands it to `confirm`, which throws when `schemas` are not of that version. With `held` (the
    /// receipt ids ``persistCommitting(_:_:schemas:receiptIDs:expected:catalog:)`` reserved for the copies it held) every
    /// intake is a copy of a stored postback: only the receipts go in, then the copies are judged.
    static func persist(_ batch: [Intake], _ db: any SQLSession, schemas: SchemaCatalog.Snapshot, receiptIDs: ReceiptIDs,
                        held: [Int64]? = nil, confirm: ((Int64?) throws -> Void)? = nil) throws -> [Disposition] {
        let now = Date()
        let decodings = batch.map { $0.currentDecoding(schemas) }
        let inserted: [(receiptID: Int64, stored: Bool)]
        var settle: () throws -> Void = {}
        switch db.dialect {
        case .sqlite: inserted = try sqliteInsertReceiptsAndRows(batch, decodings, db, now: now)
        case .postgres:
            if let held {
                // Copies of stored postbacks, held by ``persistCommitting``: only their receipts go in, sent ahead (the
                // copies' first read settles them); the catalogue's version they read is confirmed before the commit.
                let answer = try db.rowsAhead(postgresReceiptsSQL, columns(postgresReceiptValues(batch, ids: held), types: receiptColumnTypes), reuse: .prepared)
                settle = { try confirm?(try answer().first?.get("catalogue_version", as: Int64?.self)) }
                inserted = held.map { ($0, false) }
            } else {
                let ids = try receiptIDs.take(batch.count, db)
                let called = try postgresCall(batch, decodings, db, ids: ids, now: now, committing: nil)
                try confirm?(called.version)
                inserted = ids.map { ($0, called.stored.contains($0)) }
            }
        }
        var dispositions: [Disposition?] = []
        var copies: [CopyJudgement.Copy] = []
        for (intake, ids) in zip(batch, inserted) {
            guard let row = intake.row, let postback = intake.result.postback else { dispositions.append(.rejected); continue }
            if ids.stored { dispositions.append(.stored); continue }
            dispositions.append(nil)
            copies.append(CopyJudgement.Copy(intake: intake, row: row, postback: postback, receiptID: ids.receiptID))
        }
        // One disposition per copy, in the copies' order.
        var judged = try CopyJudgement.persist(copies, db, schemas: schemas, now: now).makeIterator()
        try settle()
        return dispositions.map { $0 ?? judged.next()! }
    }

    /// What ``persistCommitting(_:_:schemas:receiptIDs:expected:catalog:)`` stored: each intake's disposition, nil for
    /// one held for a transaction (a copy of a stored postback, or of one earlier in the batch), and the receipt ids
    /// reserved for the batch, which the held ones keep.
    struct CommittedBatch {
        /// `stored` or `rejected`; nil where held.
        let dispositions: [Disposition?]
        /// The batch's receipt ids, in order.
        let receiptIDs: [Int64]
    }

    /// On PostgreSQL, the batch as one statement that commits itself (``postgresCallSQL``, outside a transaction): every
    /// intake but the copies of stored postbacks (or of one earlier in the batch), which it holds for a transaction
    /// (``persist(_:_:schemas:receiptIDs:held:confirm:)``). A postback another batch is storing at the same time waits for
    /// that batch, and is held as a copy when it commits. Throws ``SchemaCatalog/Changed``, nothing stored, when the
    /// catalogue is not of `expected`, the version `schemas` are of; nil, nothing stored, when there is no version to
    /// expect.
    static func persistCommitting(_ batch: [Intake], _ db: any SQLSession, schemas: SchemaCatalog.Snapshot, receiptIDs: ReceiptIDs,
                                  expected: Int64?, catalog: SchemaCatalog) throws -> CommittedBatch? {
        // No version to expect (a reload that found none): the batch runs whole in a transaction.
        guard let expected else { return nil }
        let decodings = batch.map { $0.currentDecoding(schemas) }
        let ids = try receiptIDs.take(batch.count, db)
        let called = try postgresCall(batch, decodings, db, ids: ids, now: Date(), committing: expected)
        switch called.ended {
        case .committed:
            return CommittedBatch(dispositions: batch.indices.map { called.held.contains($0) ? nil : batch[$0].row == nil ? .rejected : .stored }, receiptIDs: ids)
        case .changed:
            try catalog.confirm(expected: expected, found: called.version)
            throw SchemaCatalog.Changed()
        case .open: throw CallUnanswered()
        }
    }

    /// SQLite: inserts each intake's receipt (`stored` when it carries a postback, else `rejected`) and its row if new,
    /// with its decoding: the decode columns in the row, its events after it, and the forwarding entries of the new rows.
    /// A multi-row statement per table (``MultiRowInsert``).
    private static func sqliteInsertReceiptsAndRows(_ batch: [Intake], _ decodings: [PostbackDecoding?], _ db: any SQLSession, now: Date) throws -> [(receiptID: Int64, stored: Bool)] {
        // One writer: the receipts' ids are the next ones, and the rows that go in take ids above every earlier row.
        let first = (try db.value("SELECT max(id) FROM receipts", as: Int64.self) ?? 0) + 1
        let ids = batch.indices.map { first + Int64($0) }
        try sqliteReceipts.insert(db, zip(ids, batch).map { id, intake in
            [SQLValue.integer(id)] + receiptArguments(intake, disposition: intake.row == nil ? .rejected : .stored).map(\.sqlValue)
        })
        var rows: [[SQLValue]] = []
        for (id, (intake, decoding)) in zip(ids, zip(batch, decodings)) {
            guard let row = intake.row, let decoding else { continue }
            rows.append(row.insertValues(receiptID: id, decoding: decoding))
        }
        var rowIDs: [Int64: Int64] = [:]
        for row in try sqlitePostbacks.insert(db, rows) { rowIDs[try row.get("receipt_id")] = try row.get("id") }
        guard let lowest = rowIDs.values.min() else { return ids.map { ($0, false) } }
        var events: [[SQLValue]] = []
        for (id, decoding) in zip(ids, decodings) {
            guard let rowID = rowIDs[id], let decoding else { continue }
            events += decoding.events.map { [SQLValue.integer(rowID)] + $0 }
        }
        try sqliteEvents.insert(db, events)
        try db.execute(sqliteForwarded, ForwardingOutbox.insertArguments(now: now) + [lowest])
        return ids.map { ($0, rowIDs[$0] != nil) }
    }

    /// How a call of `ingest_batch` ended (its `ended`).
    enum CallEnd: String {
        /// It committed the batch, but for the copies it held.
        case committed
        /// It stored nothing: the catalogue is not of the expected version.
        case changed
        /// It inserted the batch in the caller's transaction, which is still open.
        case open
    }

    /// PostgreSQL: the batch in one statement, since every statement costs a round trip (``postgresCallSQL``): the
    /// receipts (`ids`, reserved ahead, ``ReceiptIDs``), the rows that are new with their decode columns, their events and
    /// forwarding entries. `committing` (the catalogue version the decodings are of) has it commit itself, outside a
    /// transaction, holding back the copies of stored postbacks and of earlier ones in the batch (by position); nil
    /// inserts every receipt in the caller's transaction. Answers with the receipts whose rows went in, the positions
    /// held, the catalogue's version read under its shared lock, and how the call ended.
    private static func postgresCall(_ batch: [Intake], _ decodings: [PostbackDecoding?], _ db: any SQLSession, ids: [Int64], now: Date,
                                     committing: Int64?) throws -> (stored: Set<Int64>, held: Set<Int>, version: Int64?, ended: CallEnd) {
        var keyed: [(key: [UInt8], position: Int)] = []
        for (position, (intake, decoding)) in zip(batch, decodings).enumerated() {
            guard intake.row != nil, decoding != nil, let key = intake.result.postback?.dedupKey else { continue }
            keyed.append((Array(key.utf8), position))
        }
        // In dedup-key order, by the keys' bytes (as `COLLATE "C"`), copies of one postback in arrival order
        // (``postgresCallSQL``).
        keyed.sort { $0.key == $1.key ? $0.position < $1.position : $0.key.lexicographicallyPrecedes($1.key) }
        var held = Set<Int>()
        if committing != nil {
            for (earlier, later) in zip(keyed, keyed.dropFirst()) where earlier.key == later.key { held.insert(later.position) }
        }
        let sent = batch.indices.filter { !held.contains($0) }
        let rowPositions = keyed.map(\.position).filter { !held.contains($0) }
        // Each row's place among the batch's rows, in arrival order: the ids it is numbered with.
        var arrival: [Int: Int64] = [:]
        for (place, position) in rowPositions.sorted().enumerated() { arrival[position] = Int64(place + 1) }
        let receiptValues = postgresReceiptValues(sent.map { batch[$0] }, ids: sent.map { ids[$0] })
        let receiptKeys = sent.map { arrival[$0] == nil ? SQLValue.null : (batch[$0].result.postback?.dedupKey).sqlValue }
        var rows: [[SQLValue]] = [], events: [[SQLValue]] = []
        for position in rowPositions {
            guard let row = batch[position].row, let decoding = decodings[position] else { continue }
            rows.append(row.insertValues(receiptID: ids[position], decoding: decoding))
        }
        for position in rowPositions.sorted() {
            events += decodings[position]?.events.map { [SQLValue.integer(ids[position])] + $0 } ?? []
        }
        let arguments: [any SQLValueConvertible] = [committing] + columns(receiptValues, types: receiptColumnTypes)
            + [SQLArray(element: .text, values: receiptKeys), SQLArray(element: .bigint, values: rowPositions.map { .integer(arrival[$0]!) })]
            + columns(rows, types: PostbackRow.postgresColumnTypes)
            + ForwardingOutbox.insertArguments(now: now) + columns(events, types: [.bigint] + PostbackDecoding.postgresEventTypes)
        guard let answer = try db.rows(postgresCallSQL, arguments, reuse: .prepared).first else { throw CallUnanswered() }
        func receiptIDs(_ column: String) throws -> Set<Int64> {
            Set(try answer.get(column, as: String?.self)?.split(separator: " ").compactMap { Int64($0) } ?? [])
        }
        let heldReceipts = try receiptIDs("held_receipts")
        held.formUnion(batch.indices.filter { heldReceipts.contains(ids[$0]) })
        let text = try answer.get("ended", as: String.self)
        guard let ended = CallEnd(rawValue: text) else { throw SQLValueMismatch(column: "ended", found: .text(text), expected: "committed, changed or open") }
        return (try receiptIDs("stored_receipts"), held, try answer.get("found_version", as: Int64?.self), ended)
    }

    /// The receipts' values with their ids, each `stored` when it carries a postback (a copy's is judged after), else
    /// `rejected`.
    private static func postgresReceiptValues(_ intakes: [Intake], ids: [Int64]) -> [[SQLValue]] {
        zip(ids, intakes).map { id, intake in
            [SQLValue.integer(id)] + receiptArguments(intake, disposition: intake.row == nil ? .rejected : .stored).map(\.sqlValue)
        }
    }

    /// `CALL ingest_batch` gave no row, or did not commit what it was asked to.
    struct CallUnanswered: Error {}

    /// SQLite's statements for a batch (``MultiRowInsert``): the receipts with their ids, the rows with their decode
    /// columns (a row whose dedup key is taken is left out, and each one that goes in names its receipt), their events.
    private static let sqliteReceipts = MultiRowInsert(table: "receipts", columns: ["id"] + receiptColumns.components(separatedBy: ", "))
    private static let sqlitePostbacks = MultiRowInsert(table: "postbacks", columns: Array(PostbackRow.insertColumns),
                                                        tail: " ON CONFLICT(dedup_key) DO NOTHING RETURNING id, receipt_id")
    private static let sqliteEvents = MultiRowInsert(table: "postback_events", columns: ["postback_id"] + PostbackDecoding.eventColumnNames)
    /// The new rows' forwarding entries: those with ids from the lowest the batch inserted.
    private static let sqliteForwarded = ForwardingOutbox.insertSQL(from: "postbacks", where: "p.id >= ?")

    /// Values by row turned into one array argument per column, of the column's type.
    private static func columns(_ rows: [[SQLValue]], types: [SQLArray.Element]) -> [any SQLValueConvertible] {
        types.indices.map { column in SQLArray(element: types[column], values: rows.map { $0[column] }) }
    }

    /// The receipts' columns in insert order, and their array types.
    private static let receiptColumnTypes: [SQLArray.Element] = [.bigint, .text, .text, .text, .bytea, .text, .text, .text, .text, .text, .bigint, .text]
    /// Held copies' receipts, and the schema catalogue's version read under its shared lock, as `ingest_batch` reads it.
    private static let postgresReceiptsSQL: String = {
        let arrays = receiptColumnTypes.map { "?::\($0.rawValue)[]" }.joined(separator: ", ")
        return "WITH receipts_in AS (INSERT INTO receipts (id, \(receiptColumns)) SELECT * FROM unnest(\(arrays))) "
            + "SELECT schema_catalogue_version() AS catalogue_version"
    }()
    /// One statement a batch (migration `v17-ingest-batch-procedure`), the same text whatever its size (each column
    /// one array), so it is prepared once per connection (``StatementReuse/prepared``): the receipts, the rows with
    /// their decode columns and `ON CONFLICT DO NOTHING` (given in dedup-key order, with each row's place among the
    /// batch's rows: inserted in key order, since an insert holds its key until the transaction ends and one order for
    /// every batch keeps two receivers' batches holding the same new postbacks from each waiting for a key the other
    /// holds, a deadlock the server breaks only after a second; numbered in arrival order from ids taken together,
    /// ascending; inside a transaction, of a postback's copies in the batch the first goes in), each new one listed for
    /// the rollup (see `Rollup.postgresFold`), queued for the forwarding rules it matches, and its events (in receipt
    /// order). Then the schema catalogue's version, read after the keys under the catalogue's shared lock
    /// (``SchemaCatalog/forCommit(_:reloaded:)``): a schema upload takes it exclusively, so it waits for this
    /// transaction, or this statement for the upload and then reads its version. Committing, it inserts only the
    /// receipts of the rows that went in and of rejected bodies, holds the postbacks whose keys are taken (Swift holds a
    /// later copy of one earlier in the batch), and commits before it answers when the version is the one expected.
    private static let postgresCallSQL: String = {
        let arrays = (receiptColumnTypes + [.text, .bigint] + PostbackRow.postgresColumnTypes).map { "?::\($0.rawValue)[]" }
            + ["?::text", "?::float8", "?::float8"] + ([.bigint] + PostbackDecoding.postgresEventTypes).map { "?::\($0.rawValue)[]" }
        return "CALL ingest_batch(?::bigint, \(arrays.joined(separator: ", ")), NULL, NULL, NULL, NULL)"
    }()

    /// Writes a receipt and rolls it back: proves a commit of the ingest path can succeed now, without keeping anything.
    public func probeWrite() async throws {
        do {
            try await engine.write { db -> Void in
                try db.execute("INSERT INTO receipts (received_at, route, body, outcome, disposition) VALUES ('', 'probe', ?, 'invalid', 'rejected')", [Data()])
                throw ProbeRollback()
            }
        } catch is ProbeRollback {}
    }

    /// A receipt's columns, in ``receiptArguments(_:disposition:)`` order (the id comes first where it is given).
    static let receiptColumns = "received_at, remote_address, route, body, outcome, reason, disposition, claimed_id, claimed_ad_network, claimed_app, claimed_source"

    static func receiptArguments(_ intake: Intake, disposition: Disposition) -> [any SQLValueConvertible] {
        [intake.receivedAtText, intake.remoteAddress, intake.route.rawValue, Data(intake.body), intake.result.outcome.rawValue, intake.reason, disposition.rawValue,
         intake.claimed?.identifier, intake.claimed?.adNetwork, intake.claimed?.app, intake.claimed?.source]
    }

    /// The route a stored row names; one no build wrote is the database changed under the store.
    static func route(_ row: SQLRow) throws -> IntakeRoute {
        let text = try row.get("route", as: String.self)
        guard let route = IntakeRoute(rawValue: text) else { throw SQLValueMismatch(column: "route", found: .text(text), expected: "aak, skan or any") }
        return route
    }
}

/// Thrown inside ``PostbackLedger/probeWrite()`` so the engine rolls the probe back.
private struct ProbeRollback: Error {}

/// A postback's insert conflicted but no row has its dedup key: the database is being changed under the store.
struct LedgerInconsistency: Error, CustomStringConvertible {
    let dedupKey: String
    var description: String { "postback \(dedupKey) conflicted on insert but is not stored" }
}
