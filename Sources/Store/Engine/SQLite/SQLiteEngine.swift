import Foundation
import GRDB
import GRDBSQLite

/// The embedded engine: one SQLite file in WAL mode through GRDB (one writer, concurrent readers).
final class SQLiteEngine: DatabaseEngine {
    let pool: DatabasePool
    private let stop = StopSignal()
    var dialect: SQLDialect { .sqlite }

    /// Pages of write-ahead log after which a commit copies the log into the database file.
    static let checkpointPages = 200

    /// Opens (creating if needed) the file and runs the SQLite migrations.
    init(path: String, durability: Durability, busyTimeout: Double) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // A checkpoint copies the log into the file inside the commit that crosses this many pages, so the batch
            // committing then (and every request waiting for the next) waits for it: 200 pages instead of SQLite's
            // 1,000 make those waits a fifth as long (p99 at 64 connections 17.5 -> 15 ms, for about 4% of the rate;
            // docs/performance.md, "Settings chosen by measurement").
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.checkpointPages)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // A database a newer Countersign migrated further is refused, as on PostgreSQL: its tables are not this build's.
        let known = Set(SQLiteMigrations.migrator.migrations)
        let unknown = try pool.read { db in try SQLiteMigrations.migrator.appliedIdentifiers(db) }.filter { !known.contains($0) }.sorted()
        if let newer = unknown.first { throw MigrationError.newerDatabase(newer) }
        try SQLiteMigrations.migrator.migrate(pool)
    }

    func transaction<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.write { db in try body(SQLiteSession(db: db)) }
    }

    func autocommit<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in try body(SQLiteSession(db: db)) }
    }

    func snapshot<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.read { db in try body(SQLiteSession(db: db)) }
    }

    func readRows<State: Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse, into state: State,
                                   _ row: @escaping @Sendable (inout State, SQLCells) throws -> Void) async throws -> State {
        try await Blocking.run { [pool] in
            try pool.read { db in
                var state = state
                try SQLiteSession(db: db).forEachRow(sql, arguments, reuse: reuse) { try row(&state, $0) }
                return state
            }
        }
    }

    func lane() -> any TransactionLane { EngineLane(engine: self) }

    /// SQLite needs nothing running: waits for ``close()`` or cancellation, so the store runs alike on both engines.
    func run() async {
        await stop.wait()
    }

    /// Ends ``run()``. The file's connections close when the last user of the engine lets it go (GRDB closes them
    /// when the pool is released): closing them here raced with a read still in flight on another thread, which then
    /// used a closed connection (a crash under `make test`).
    func close() {
        stop.fire()
    }
}

/// A GRDB connection as an ``SQLSession``.
///
/// GRDB opens the file, runs the migrations, owns the transactions and keeps each connection's compiled statements;
/// the values are bound and the rows read through SQLite's own C functions on those statements. GRDB's argument and
/// row types cost more than SQLite's work on the commit thread (a third of its instructions by callgrind: its generic
/// code is not specialised in this module), and reports and exports read every cell through them.
struct SQLiteSession: SQLSession {
    let db: Database
    var dialect: SQLDialect { .sqlite }

    func execute(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int {
        try run(try db.cachedStatement(sql: sql), sql, arguments) { _ in }
        return db.changesCount
    }

    func insert(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int64? {
        try run(try db.cachedStatement(sql: sql), sql, arguments) { _ in }
        // Changes made by triggers are not counted, and the last id is the statement's own once its triggers ended.
        return db.changesCount > 0 ? db.lastInsertedRowID : nil
    }

    func rows(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> [SQLRow] {
        let statement = reuse == .once ? try db.makeStatement(sql: sql) : try db.cachedStatement(sql: sql)
        let columns = statement.columnNames
        var rows: [SQLRow] = []
        try run(statement, sql, arguments) { handle in
            rows.append(SQLRow(columns: columns, values: (0..<Int32(columns.count)).map { Self.value(handle, $0) }))
        }
        return rows
    }

    /// Runs the query now: SQLite has no round trip to save.
    func rowsAhead(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> () throws -> [SQLRow] {
        let rows = try rows(sql, arguments, reuse: reuse)
        return { rows }
    }

    /// Runs a query and hands each row to `row` as SQLite steps to it, without making a value of any cell
    /// (``DatabaseEngine/readRows(_:_:reuse:into:_:)``); compiled for this call, or kept compiled when `reuse` says so.
    func forEachRow(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse, _ row: (SQLCells) throws -> Void) throws {
        let statement = reuse == .once ? try db.makeStatement(sql: sql) : try db.cachedStatement(sql: sql)
        try run(statement, sql, arguments) { handle in try row(SQLCells(sqlite: handle)) }
    }

    /// Binds `arguments` to `statement`, steps it to its end calling `row` for each row, and resets it, so it holds no
    /// lock and no values once done.
    private func run(_ statement: Statement, _ sql: String, _ arguments: [any SQLValueConvertible], row: (OpaquePointer) throws -> Void) throws {
        let handle = statement.sqliteStatement
        // SQLite rolls a transaction back by itself after some errors (a full disk, an I/O error); nothing may then run
        // outside it as if it were still open. Every session runs inside GRDB's transaction (reads too).
        guard sqlite3_get_autocommit(db.sqliteConnection) == 0 else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "the transaction was rolled back by SQLite; nothing more runs in it", sql: sql)
        }
        sqlite3_reset(handle)
        // Reset once done, so it holds no lock; its values stay bound (SQLite's own copies) until the next run binds others.
        defer { sqlite3_reset(handle) }
        guard Int(sqlite3_bind_parameter_count(handle)) == arguments.count else {
            throw DatabaseError(resultCode: .SQLITE_RANGE, message: "\(arguments.count) arguments for \(sqlite3_bind_parameter_count(handle)) placeholders", sql: sql)
        }
        for (index, argument) in arguments.enumerated() {
            let code = Self.bind(argument.sqlValue, to: handle, at: Int32(index + 1))
            guard code == SQLITE_OK else { throw error(code, sql) }
        }
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_ROW: try row(handle)
            case SQLITE_DONE: return
            default: throw error(code, sql)
            }
        }
    }

    private func error(_ code: Int32, _ sql: String) -> DatabaseError {
        let message = sqlite3_errmsg(db.sqliteConnection).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: sqlite3_extended_errcode(db.sqliteConnection)), message: message ?? "SQLite error \(code)", sql: sql)
    }

    /// SQLite copies text and bytes bound with this destructor before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func bind(_ value: SQLValue, to handle: OpaquePointer, at index: Int32) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(handle, index)
        case .integer(let integer):
            return sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            return sqlite3_bind_double(handle, index, real)
        case .text(var text):
            return text.withUTF8 { bytes in
                // An empty buffer may have no address, and a NULL pointer would bind NULL instead of ''. The 64-bit
                // length makes a value past SQLite's limit SQLITE_TOOBIG, not a trap.
                guard let address = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_text64(handle, index, "", 0, transient, UInt8(SQLITE_UTF8)) }
                return address.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(handle, index, $0, sqlite3_uint64(bytes.count), transient, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            return bytes.withUnsafeBytes { buffer in
                guard let address = buffer.baseAddress, !buffer.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
                return sqlite3_bind_blob64(handle, index, address, sqlite3_uint64(buffer.count), transient)
            }
        }
    }

    /// Column `index` of the current row.
    private static func value(_ handle: OpaquePointer, _ index: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            // The pointer first, then its length, as SQLite documents.
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index))), as: UTF8.self))
        case SQLITE_BLOB:
            guard let blob = sqlite3_column_blob(handle, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: Int(sqlite3_column_bytes(handle, index)))))
        default:
            return .null
        }
    }
}
