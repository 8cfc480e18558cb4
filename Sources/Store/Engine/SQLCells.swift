import GRDBSQLite
import PostgresNIO

/// One cell of a row while it is read: text and bytes are lent, valid only inside ``SQLCells/withCell(at:_:)``.
public enum SQLCell {
    case null
    case integer(Int64)
    case real(Double)
    /// Valid UTF-8 (invalid sequences, which SQLite and a SQL_ASCII PostgreSQL database can hold, repaired as
    /// `String(decoding:as:)` repairs them).
    case text(UnsafeBufferPointer<UInt8>)
    case blob(UnsafeRawBufferPointer)
}

/// One row of a query while it is read (``DatabaseEngine/readRows(_:_:reuse:into:_:)``), for writers that copy its cells straight
/// to their output (``TableSink/append(cells:)``) instead of making a value of each first.
public struct SQLCells {
    enum Source {
        /// SQLite's statement, stepped to the row.
        case sqlite(OpaquePointer)
        /// A row postgres-nio has read (its columns' types checked, ``PostgresSession/checkReadable(_:)``), whose cells are
        /// found by walking it from the first.
        case postgres(PostgresRow)
        /// A row's cells already walked, for a reader that takes them out of order, read in `format` when given (a
        /// prepared statement's are binary, though described as text).
        case postgresCells([PostgresCell], format: PostgresFormat?)
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

    init(postgres row: PostgresRow, count: Int) {
        source = .postgres(row)
        self.count = count
    }

    /// A row's cells, each read in `format` when given.
    init(postgres cells: [PostgresCell], format: PostgresFormat?) {
        source = .postgresCells(cells, format: format)
        count = cells.count
    }

    /// Calls `body` with each cell in order, lent for the call: the way to read every cell (a PostgreSQL row is walked
    /// once, where ``withCell(at:_:)`` walks it to the cell each time).
    public func forEachCell(_ body: (SQLCell) throws -> Void) rethrows {
        if case .postgres(let row) = source {
            for cell in row { try Self.withCell(cell, format: nil, body) }
        } else {
            for index in 0..<count { try withCell(at: index, body) }
        }
    }

    /// Calls `body` with a PostgreSQL cell read in `format` (else as described): whole numbers and text lent from the
    /// row's buffer, other values as the session reads them (the types were checked).
    private static func withCell<T>(_ cell: PostgresCell, format: PostgresFormat?, _ body: (SQLCell) throws -> T) rethrows -> T {
        var cell = cell
        cell.format = format ?? cell.format
        guard var bytes = cell.bytes else { return try body(.null) }
        switch (cell.dataType, cell.format) {
        case (.int8, .binary) where bytes.readableBytes == 8: return try body(.integer(bytes.readInteger(as: Int64.self)!))
        case (.int4, .binary) where bytes.readableBytes == 4: return try body(.integer(Int64(bytes.readInteger(as: Int32.self)!)))
        case (.text, .binary), (.varchar, .binary), (.bpchar, .binary), (.name, .binary):
            // UTF-8 (the engine's client encoding), except from a SQL_ASCII database, which converts nothing: ASCII
            // as it is, anything else through Swift's repair, as SQLite's text.
            return try bytes.withUnsafeReadableBytes { try withText($0.assumingMemoryBound(to: UInt8.self), body) }
        default:
            // The column's type was checked (``PostgresSession/checkReadable(_:)``): its decoding fails only on bytes the
            // server did not send as PostgreSQL's binary format defines them.
            let value = (try? PostgresSession.value(cell)) ?? .null
            return try SQLCells(values: [value]).withCell(at: 0, body)
        }
    }

    /// Calls `body` with `bytes` as text: ASCII, valid UTF-8 as it is, lent; anything else through Swift's repair.
    private static func withText<T>(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (SQLCell) throws -> T) rethrows -> T {
        guard bytes.contains(where: { $0 >= 0x80 }) else { return try body(.text(bytes)) }
        var repaired = String(decoding: bytes, as: UTF8.self)
        return try repaired.withUTF8 { try body(.text($0)) }
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
        case .postgres(let row):
            var cells = row.makeIterator()
            for _ in 0..<index { _ = cells.next() }
            return try Self.withCell(cells.next()!, format: nil, body)
        case .postgresCells(let cells, let format):
            return try Self.withCell(cells[index], format: format, body)
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
                return try Self.withText(UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))), body)
            case SQLITE_BLOB:
                let blob = sqlite3_column_blob(handle, column)
                return try body(.blob(UnsafeRawBufferPointer(start: blob, count: blob == nil ? 0 : Int(sqlite3_column_bytes(handle, column)))))
            default:
                return try body(.null)
            }
        }
    }
}

extension SQLCells {
    /// The row's cells as values, made one row at a time (a performance group's few dozen cells).
    var values: [SQLValue] {
        var values: [SQLValue] = []
        values.reserveCapacity(count)
        forEachCell { values.append($0.value) }
        return values
    }
}

extension SQLCell {
    /// The cell as a value of its own.
    var value: SQLValue {
        switch self {
        case .null: .null
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .text(let text): .text(String(decoding: text, as: UTF8.self))
        case .blob(let blob): .blob([UInt8](blob))
        }
    }

    /// The cell as a whole number, as `Int64(sqlValue:)` reads one (an integer, or a real without a fraction).
    var wholeNumber: Int64? {
        switch self {
        case .integer(let integer): integer
        case .real(let real): Int64(sqlValue: .real(real))
        default: nil
        }
    }
}
