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
    /// Runs a query and returns its rows. `reusable` keeps the compiled statement for the next call with the same text
    /// (SQLite caches it per connection, without bound): pass false for text built from a request, such as a report.
    func rows(_ sql: String, _ arguments: [any SQLValueConvertible], reusable: Bool) throws -> [SQLRow]
}

extension SQLSession {
    /// Runs one of the store's fixed queries, whose compiled statement is kept.
    public func rows(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> [SQLRow] {
        try rows(sql, arguments, reusable: true)
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
