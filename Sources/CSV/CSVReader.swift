/// A reader of comma-separated values (RFC 4180) over bytes, one record at a time, linear in its input: fields quoted
/// with `"` may hold commas, quotes (doubled) and line breaks; lines end in LF or CRLF; a UTF-8 byte-order mark at the
/// start is skipped. Every record says on which line of the file it starts, so a problem can name it.
public struct CSVReader {
    /// One record: the line it starts on (from 1) and its fields.
    public struct Record: Sendable, Equatable {
        public let line: Int
        public let fields: [String]
    }

    private let bytes: [UInt8]
    private var offset = 0
    private var line = 1
    /// The most fields a record may have, and the longest field in bytes: beyond them the file is not what it claims.
    public let maximumFields: Int
    public let maximumFieldBytes: Int

    /// A reader over `bytes`.
    public init(_ bytes: [UInt8], maximumFields: Int = 64, maximumFieldBytes: Int = 1024) {
        self.bytes = bytes
        self.maximumFields = maximumFields
        self.maximumFieldBytes = maximumFieldBytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { offset = 3 }
    }

    /// The next record, or nil at the end; a blank line is a record with one empty field.
    public mutating func next() throws(CSVProblem) -> Record? {
        guard offset < bytes.count else { return nil }
        let start = line
        var fields: [String] = []
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), newline: UInt8 = 0x0A, carriageReturn: UInt8 = 0x0D
        while true {
            let text: String
            if offset < bytes.count, bytes[offset] == quote {
                // A quoted field: up to the quote that is not doubled; doubled quotes stand for one.
                var cursor = offset + 1
                var unescaped: [UInt8]?
                var runStart = cursor
                while true {
                    guard cursor < bytes.count else { throw CSVProblem(line: start, message: "a quoted field is not closed") }
                    let byte = bytes[cursor]
                    if byte == quote {
                        if cursor + 1 < bytes.count, bytes[cursor + 1] == quote {
                            unescaped = (unescaped ?? []) + bytes[runStart...cursor]
                            cursor += 2
                            runStart = cursor
                            continue
                        }
                        break
                    }
                    if byte == newline { line += 1 }
                    cursor += 1
                }
                guard cursor - offset - 1 <= maximumFieldBytes else { throw CSVProblem(line: start, message: "field \(fields.count + 1) is longer than \(maximumFieldBytes) bytes") }
                let raw = unescaped.map { $0 + bytes[runStart..<cursor] } ?? Array(bytes[(offset + 1)..<cursor])
                guard let decoded = String(validating: raw, as: UTF8.self) else { throw CSVProblem(line: start, message: "field \(fields.count + 1) is not UTF-8 text") }
                text = decoded
                offset = cursor + 1
                if offset < bytes.count, bytes[offset] == carriageReturn, offset + 1 < bytes.count, bytes[offset + 1] == newline { offset += 1 }
                guard offset >= bytes.count || bytes[offset] == comma || bytes[offset] == newline else {
                    throw CSVProblem(line: start, message: "text after the closing quote of field \(fields.count + 1)")
                }
            } else {
                var cursor = offset
                while cursor < bytes.count, bytes[cursor] != comma, bytes[cursor] != newline {
                    if bytes[cursor] == quote { throw CSVProblem(line: start, message: "a quote inside an unquoted field \(fields.count + 1); quote the whole field") }
                    cursor += 1
                }
                var end = cursor
                if end > offset, end < bytes.count || end == bytes.count, bytes[end - 1] == carriageReturn, end == bytes.count || bytes[end] == newline { end -= 1 }
                guard end - offset <= maximumFieldBytes else { throw CSVProblem(line: start, message: "field \(fields.count + 1) is longer than \(maximumFieldBytes) bytes") }
                guard let decoded = String(validating: bytes[offset..<end], as: UTF8.self) else {
                    throw CSVProblem(line: start, message: "field \(fields.count + 1) is not UTF-8 text")
                }
                text = decoded
                offset = cursor
            }
            fields.append(text)
            guard fields.count <= maximumFields else { throw CSVProblem(line: start, message: "more than \(maximumFields) fields") }
            if offset < bytes.count, bytes[offset] == comma {
                offset += 1
                continue
            }
            if offset < bytes.count, bytes[offset] == newline {
                offset += 1
                line += 1
            }
            return Record(line: start, fields: fields)
        }
    }
}

/// Why a CSV file, or one line of it, cannot be read: the line (from 1), the column when one is to blame, and what to do.
public struct CSVProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let line: Int
    public let column: String?
    public let message: String

    /// A problem with `line` (and `column`).
    public init(line: Int, column: String? = nil, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { "line \(line)" + (column.map { ", \($0)" } ?? "") + ": \(message)" }
}
