/// A connection inside one transaction (or a read snapshot), on either engine.
///
/// SQL uses `?` placeholders on both engines; the PostgreSQL adapter numbers them. Where the engines' SQL differs,
/// callers ask ``dialect``; the rules around the SQL are written once.
public protocol SQLSession {
    /// Which SQL this session speaks.
    var dialect: SQLDialect { get }
    /// Runs a statement and returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int
    /// Runs an INSERT of one row into a table with an `id` key and returns the new row's id, or nil when it inserted
    /// nothing (`ON CONFLICT DO NOTHING` met a conflict). SQLite reads the id SQLite assigned, without fetching a row;
    /// PostgreSQL adds `RETURNING id`.
    func insert(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int64?
    /// Runs a query and returns its rows; `reuse` says how long its compiled form is worth keeping.
    func rows(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> [SQLRow]
    /// Runs a query whose rows are wanted later, in order with the statements after it: PostgreSQL sends it without
    /// waiting, so its answer arrives with the next statement's and a transaction waits once for both; SQLite, which
    /// has no round trip to save, runs it now. Call the result for the rows (it waits if nothing was answered since).
    func rowsAhead(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> () throws -> [SQLRow]
    /// Runs a query and hands each row's cells to `row`, lent for the call: SQLite's as it steps to the row, without
    /// making a value of any cell; PostgreSQL's once its answer is read.
    func forEachRow(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse, _ row: (SQLCells) throws -> Void) throws
}

/// How long a statement's compiled form is kept, by how often its text is run.
public enum StatementReuse: Sendable {
    /// Text built for one request, such as a report: compiled for this call only.
    case once
    /// One of the store's fixed statements: SQLite keeps it compiled per connection (without bound); PostgreSQL parses
    /// it each time, reading each argument as the type of the value bound.
    case cached
    /// A fixed statement every commit runs: both engines keep it compiled per connection, so PostgreSQL parses and plans
    /// it once per connection rather than once per batch. PostgreSQL fixes the arguments' types when it prepares the
    /// statement, so every placeholder must be cast (`?::bigint[]`).
    case prepared
}

extension SQLSession {
    /// Runs one of the store's fixed queries, whose compiled statement is kept.
    public func rows(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> [SQLRow] {
        try rows(sql, arguments, reuse: .cached)
    }


    /// Runs a statement without arguments.
    @discardableResult
    public func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    /// The first row of a query, if any.
    public func row(_ sql: String, _ arguments: [any SQLValueConvertible] = []) throws -> SQLRow? {
        try rows(sql, arguments).first
    }

    /// The first column of the first row as `T`, or nil when there is no row or it is NULL.
    public func value<T: SQLValueDecodable>(_ sql: String, _ arguments: [any SQLValueConvertible] = [], as type: T.Type = T.self) throws -> T? {
        guard let row = try row(sql, arguments) else { return nil }
        return try row.get(at: 0, as: T?.self)
    }
}
