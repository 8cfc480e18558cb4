import Foundation
import NIOCore
import PostgresNIO

/// A column of values bound to PostgreSQL as one array, for `unnest($n::type[])`: a batch insert then has the same
/// statement text whatever its rows, so the server parses a few dozen placeholders instead of thousands.
/// PostgreSQL only (``PostgresEngine`` binds it in the array binary format); SQLite statements never take one.
struct SQLArray: SQLValueConvertible, PostgresDynamicTypeEncodable {
    /// The element type, as the statement casts it.
    enum Element: String, Sendable {
        case bigint, text, bytea
        case double = "double precision"

        var oid: PostgresDataType {
            switch self {
            case .bigint: .int8
            case .text: .text
            case .bytea: .bytea
            case .double: .float8
            }
        }

        var arrayOID: PostgresDataType {
            switch self {
            case .bigint: .int8Array
            case .text: .textArray
            case .bytea: .byteaArray
            case .double: .float8Array
            }
        }
    }

    let element: Element
    let values: [SQLValue]

    /// Never used: SQLite binds values one by one.
    var sqlValue: SQLValue { preconditionFailure("an SQLArray is bound only by PostgreSQL") }

    var psqlType: PostgresDataType { element.arrayOID }
    var psqlFormat: PostgresFormat { .binary }

    /// PostgreSQL's array binary format: dimensions, a has-nulls flag, the element type, each dimension's length and
    /// lower bound, then each element as its length (-1 for NULL) and bytes.
    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        guard !values.isEmpty else {
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(Int32(0))
            buffer.writeInteger(element.oid.rawValue)
            return
        }
        buffer.writeInteger(Int32(1))
        buffer.writeInteger(Int32(values.contains(.null) ? 1 : 0))
        buffer.writeInteger(element.oid.rawValue)
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(Int32(1))
        for value in values {
            switch (element, value) {
            case (_, .null):
                buffer.writeInteger(Int32(-1))
            case (.bigint, .integer(let integer)):
                buffer.writeInteger(Int32(8))
                buffer.writeInteger(integer)
            case (.text, .text(let text)):
                buffer.writeInteger(Int32(text.utf8.count))
                buffer.writeString(text)
            case (.bytea, .blob(let bytes)):
                buffer.writeInteger(Int32(bytes.count))
                buffer.writeBytes(bytes)
            case (.double, .real(let double)):
                buffer.writeInteger(Int32(8))
                buffer.writeInteger(double.bitPattern)
            case (.double, .integer(let integer)):
                buffer.writeInteger(Int32(8))
                buffer.writeInteger(Double(integer).bitPattern)
            case (.text, _), (.bigint, _), (.bytea, _), (.double, _):
                // The column's values have one SQL type; a mismatch is a programming error caught by the store tests.
                preconditionFailure("\(value) in a \(element.rawValue) array")
            }
        }
    }
}
