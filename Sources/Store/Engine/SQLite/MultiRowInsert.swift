/// Many rows into one table in a few statements on SQLite: `INSERT ... VALUES (...), (...), ...`.
///
/// A batch is cut into chunks whose sizes are powers of two up to ``largestChunk`` (a batch of 13 is 8 + 4 + 1 rows),
/// so each table has at most seven statement texts, each compiled once per connection and kept; a statement per row
/// would cost its reset, its step and its bookkeeping on every row. PostgreSQL takes each column as one array instead
/// (``SQLArray``), one statement a batch whatever its size.
struct MultiRowInsert: Sendable {
    /// The statement for each chunk size, by size.
    private let texts: [Int: String]

    /// An insert into `table` of `columns` (in the order of each row's values), followed by `tail`
    /// (`ON CONFLICT ... DO NOTHING RETURNING ...`) or nothing.
    init(table: String, columns: [String], tail: String = "") {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let head = "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES "
        var texts: [Int: String] = [:]
        var size = 1
        while size <= Self.largestChunk {
            texts[size] = head + Array(repeating: row, count: size).joined(separator: ", ") + tail
            size *= 2
        }
        self.texts = texts
    }

    /// The most rows one statement takes: 64 rows of the widest table (postbacks, 46 columns) stay far below SQLite's
    /// 32,766 placeholders.
    static let largestChunk = 64

    /// Inserts `rows` and returns what the statements' `RETURNING` clause gave, in chunk order.
    @discardableResult
    func insert(_ db: any SQLSession, _ rows: [[SQLValue]]) throws -> [SQLRow] {
        var returned: [SQLRow] = []
        var start = 0
        while start < rows.count {
            var size = Self.largestChunk
            while size > rows.count - start { size /= 2 }
            let chunk = rows[start..<(start + size)]
            returned += try db.rows(texts[size]!, chunk.flatMap { $0 }, reuse: .cached)
            start += size
        }
        return returned
    }
}
