import Foundation
import GRDB

/// The embedded engine: one SQLite file in WAL mode through GRDB (one writer, concurrent readers).
final class SQLiteEngine: DatabaseEngine {
    let pool: DatabasePool
    private let stop = StopSignal()
    var dialect: SQLDialect { .sqlite }

    /// Opens (creating if needed) the file and runs the SQLite migrations.
    init(path: String, durability: Durability, busyTimeout: Double) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
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

    func snapshot<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.read { db in try body(SQLiteSession(db: db)) }
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
struct SQLiteSession: SQLSession {
    let db: Database
    var dialect: SQLDialect { .sqlite }

    func execute(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        return db.changesCount
    }

    func insert(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int64? {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        // Changes made by triggers are not counted, and the last id is the statement's own once its triggers ended.
        return db.changesCount > 0 ? db.lastInsertedRowID : nil
    }

    func rows(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> [SQLRow] {
        let statement = reuse == .once ? try db.makeStatement(sql: sql) : try db.cachedStatement(sql: sql)
        let columns = statement.columnNames
        return try Row.fetchAll(statement, arguments: Self.arguments(arguments)).map { row in
            SQLRow(columns: columns, values: row.databaseValues.map(Self.value))
        }
    }

    /// The values as GRDB's arguments. Built through GRDB's initialiser of optional existentials, which maps with a
    /// closure: its other initialiser maps with a key path, which costs about 2,500 instructions an argument when
    /// GRDB's generic code is not specialised here (a third of the commit thread's work, by callgrind).
    static func arguments(_ values: [any SQLValueConvertible]) -> StatementArguments {
        StatementArguments(values.map { value -> (any DatabaseValueConvertible)? in
            switch value.sqlValue {
            case .null: DatabaseValue.null
            case .integer(let integer): integer.databaseValue
            case .real(let real): real.databaseValue
            case .text(let text): text.databaseValue
            case .blob(let bytes): Data(bytes).databaseValue
            }
        })
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let integer): .integer(integer)
        case .double(let double): .real(double)
        case .string(let text): .text(text)
        case .blob(let data): .blob(Array(data))
        }
    }
}
