import JWS
import Store

/// The one writer of tables as data, used by every route and command that emits rows (the store lends them, as a
/// ``TableSink``): CSV (RFC 4180, with the header line; a text cell that a spreadsheet would run as a formula is
/// neutralised, ``CSVField``), NDJSON (an object a row) and JSON (`{"rows": [...]}` with members after the rows). Rows
/// are written one at a time into bytes that the caller takes as it goes (``take()``), so an export of any size
/// streams in flat memory.
///
/// A cell is a JSON value (reports, listings) or a database value (``append(cells:)`` as the store lends it, for
/// exports; ``append(values:)``: the same text as ``ReportTable/cell(_:)`` would give, without making a JSON value of
/// every cell first).
public struct TableWriter: TableSink {
    /// What the rows become.
    public enum Format: Sendable {
        case csv, ndjson, json
    }

    /// The format written.
    public let format: Format
    /// The columns, in the rows' order.
    public let columns: [String]
    /// Written and not yet taken.
    public private(set) var bytes: [UInt8] = []
    /// How many bytes are written and not yet taken.
    public var pendingCount: Int { bytes.count }
    private var rows = 0
    /// Each column's name as a JSON member's start (`"name":`), made once.
    private let keys: [[UInt8]]

    /// A writer of `columns` in `format`; CSV's header line or JSON's opening is written at once.
    public init(format: Format, columns: [String]) {
        self.format = format
        self.columns = columns
        keys = columns.map { name in
            var key: [UInt8] = []
            Self.writeJSONString(name, into: &key)
            return key + [UInt8(ascii: ":")]
        }
        switch format {
        case .csv:
            for (index, column) in columns.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.writeCSVText(column, into: &bytes)
            }
            bytes += [0x0D, 0x0A]
        case .json: bytes += Array(#"{"rows":["#.utf8)
        case .ndjson: break
        }
    }

    /// Appends a row of JSON cells.
    public mutating func append(_ row: [JSONValue]) {
        startRow()
        // A row has a cell per column; extra cells are left out, as a JSON object of the columns would.
        for (index, cell) in zip(keys.indices, row) {
            switch format {
            case .csv:
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                switch cell {
                case .null: break
                case .number(let literal): bytes += Array(literal.utf8)
                case .bool(let value): bytes += Array((value ? "true" : "false").utf8)
                default: Self.writeCSVText(Self.plain(cell), into: &bytes)
                }
            case .ndjson, .json:
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += keys[index]
                bytes += Array(cell.serialized.utf8)
            }
        }
        endRow()
    }

    /// Appends a row of database values, written as ``ReportTable/cell(_:)`` makes them (whole doubles without a
    /// fraction, bytes as base64).
    public mutating func append(values row: [SQLValue]) {
        append(cells: SQLCells(values: row))
    }

    /// Appends a row as the store lends it, written as ``append(values:)`` writes it, its text copied from the
    /// database's buffer.
    public mutating func append(cells row: SQLCells) {
        startRow()
        let csv = format == .csv
        var index = 0
        row.forEachCell { cell in
            guard index < keys.count else { return }
            defer { index += 1 }
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            if !csv { bytes += keys[index] }
            switch cell {
            case .null: if !csv { bytes += Array("null".utf8) }
            case .integer(let integer): Self.writeInteger(integer, into: &bytes)
            // JSON has no infinity or NaN: such a value is written as none.
            case .real(let real) where !real.isFinite: if !csv { bytes += Array("null".utf8) }
            case .real(let real): bytes += Array(ReportTable.number(real).utf8)
            case .text(let text):
                if csv { CSVField.write(utf8: text, into: &bytes) } else { Self.writeJSONString(utf8: text, into: &bytes) }
            case .blob(let blob):
                let text = Base64.encode(Array(blob), alphabet: .standard)
                if csv { Self.writeCSVText(text, into: &bytes) } else { Self.writeJSONString(text, into: &bytes) }
            }
        }
        endRow()
    }

    /// Ends the text: JSON closes its rows and adds `extra` members (ignored by CSV and NDJSON, which have no place for
    /// them).
    public mutating func finish(extra: [JSONMember] = []) {
        guard format == .json else { return }
        bytes.append(UInt8(ascii: "]"))
        for member in extra {
            bytes.append(UInt8(ascii: ","))
            Self.writeJSONString(member.key, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            bytes += Array(member.value.serialized.utf8)
        }
        bytes += [UInt8(ascii: "}"), 0x0A]
    }

    /// The bytes written since the last take.
    public mutating func take() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }

    private mutating func startRow() {
        switch format {
        case .csv: break
        case .ndjson: bytes.append(UInt8(ascii: "{"))
        case .json: bytes += rows == 0 ? [UInt8(ascii: "{")] : [UInt8(ascii: ","), UInt8(ascii: "{")]
        }
        rows += 1
    }

    private mutating func endRow() {
        switch format {
        case .csv: bytes += [0x0D, 0x0A]
        case .ndjson: bytes += [UInt8(ascii: "}"), 0x0A]
        case .json: bytes.append(UInt8(ascii: "}"))
        }
    }

    /// A cell as text: a list of plain values joined with commas (`read,schemas`), other lists and objects as JSON.
    public static func plain(_ value: JSONValue) -> String {
        switch value {
        case .null: ""
        case .string(let text): text
        case .array(let items) where items.allSatisfy({ if case .array = $0 { false } else if case .object = $0 { false } else { true } }):
            items.map(plain).joined(separator: ",")
        default: value.serialized
        }
    }

    private static func writeCSVText(_ text: String, into bytes: inout [UInt8]) {
        CSVField.write(text, into: &bytes)
    }

    /// `text` as a JSON string literal, escaped as ``JSONValue/serialized`` escapes it.
    static func writeJSONString(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { writeJSONString(utf8: $0, into: &bytes) }
    }

    /// The UTF-8 text `text` as a JSON string literal.
    static func writeJSONString(utf8 text: UnsafeBufferPointer<UInt8>, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Most text needs no escaping: appended whole.
        guard text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            bytes.append(contentsOf: text)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `value` in decimal, its digits written last first and then turned around in place.
    private static func writeInteger(_ value: Int64, into bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var magnitude = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }
}
