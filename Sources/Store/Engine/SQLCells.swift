import GRDBSQLite

/// One cell of a row while it is read: text and bytes are lent, valid only inside ``SQLCells/withCell(at:_:)``.
public enum SQLCell {
    case null
    case integer(Int64)
    case real(Double)
    /// Valid UTF-8 (SQLite's invalid sequences repaired as `String(decoding:as:)` repairs them).
    case text(UnsafeBufferPointer<UInt8>)
    case blob(UnsafeRawBufferPointer)
}

/// One row of a query while it is read (``SQLSession/forEachRow(_:_:_:)``), for writers that copy its cells straight
/// to their output (``TableWriter/append(cells:)``) instead of making a value of each first.
public struct SQLCells {
    enum Source {
        /// SQLite's statement, stepped to the row.
        case sqlite(OpaquePointer)
        /// A row already read.
        case values([SQLValue])
    }

    let source: Source
    /// How many cells the row has.
    public let count: Int

    /// The cells of a row already read.
    public init(values: [SQLValue]) {
        source = .values(values)
        count = values.count
    }

    init(sqlite handle: OpaquePointer) {
        source = .sqlite(handle)
        count = Int(sqlite3_column_count(handle))
    }

    /// Calls `body` with cell `index`, lent for the call.
    public func withCell<T>(at index: Int, _ body: (SQLCell) throws -> T) rethrows -> T {
        switch source {
        case .values(let values):
            switch values[index] {
            case .null: return try body(.null)
            case .integer(let integer): return try body(.integer(integer))
            case .real(let real): return try body(.real(real))
            case .text(var text): return try text.withUTF8 { try body(.text($0)) }
            case .blob(let bytes): return try bytes.withUnsafeBytes { try body(.blob($0)) }
            }
        case .sqlite(let handle):
            let column = Int32(index)
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER:
                return try body(.integer(sqlite3_column_int64(handle, column)))
            case SQLITE_FLOAT:
                return try body(.real(sqlite3_column_double(handle, column)))
            case SQLITE_TEXT:
                // The pointer first, then its length, as SQLite documents.
                guard let text = sqlite3_column_text(handle, column) else { return try body(.text(UnsafeBufferPointer(start: nil, count: 0))) }
                let bytes = UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column)))
                // ASCII is valid UTF-8 as it is; anything else goes through Swift's repair.
                guard bytes.contains(where: { $0 >= 0x80 }) else { return try body(.text(bytes)) }
                var repaired = String(decoding: bytes, as: UTF8.self)
                return try repaired.withUTF8 { try body(.text($0)) }
            case SQLITE_BLOB:
                let blob = sqlite3_column_blob(handle, column)
                return try body(.blob(UnsafeRawBufferPointer(start: blob, count: blob == nil ? 0 : Int(sqlite3_column_bytes(handle, column)))))
            default:
                return try body(.null)
            }
        }
    }
}
