import Foundation
import Postback

/// A value bound to or read from SQL, the same on every engine: integers (and booleans as 0/1), doubles, text and bytes.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift value that can be bound as a SQL argument.
public protocol SQLValueConvertible: Sendable {
    /// The value as SQL sees it.
    var sqlValue: SQLValue { get }
}

extension Int64: SQLValueConvertible { public var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLValueConvertible { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Bool: SQLValueConvertible { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Double: SQLValueConvertible { public var sqlValue: SQLValue { .real(self) } }
extension String: SQLValueConvertible { public var sqlValue: SQLValue { .text(self) } }
extension Data: SQLValueConvertible { public var sqlValue: SQLValue { .blob(Array(self)) } }
extension SQLValue: SQLValueConvertible { public var sqlValue: SQLValue { self } }
extension Optional: SQLValueConvertible where Wrapped: SQLValueConvertible {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// An app id binds as its number (the `bigint` and `INTEGER` columns of postbacks, the registry, spend, ...); where
/// a table keeps it as text (`schemas`, `postback_events`, Apple Ads records and jobs) the store binds its
/// `description`.
extension AppID: SQLValueConvertible { public var sqlValue: SQLValue { .integer(number) } }

/// A value read back was not of the type the code asked for: the database does not match the code's migrations.
public struct SQLValueMismatch: Error, CustomStringConvertible {
    /// The column read.
    public let column: String
    /// What was found there.
    public let found: SQLValue
    /// The type asked for.
    public let expected: String
    public var description: String { "column \(column) holds \(found), expected \(expected)" }
}

/// A Swift value that can be read from a SQL value.
public protocol SQLValueDecodable {
    /// The value read from `value`, or nil when it has another type.
    init?(sqlValue value: SQLValue)
}

extension Int64: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        switch value {
        case .integer(let integer): self = integer
        case .real(let real) where real == real.rounded() && abs(real) < 9e18: self = Int64(real)
        default: return nil
        }
    }
}
extension Int: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        guard let integer = Int64(sqlValue: value) else { return nil }
        self = Int(integer)
    }
}
extension Bool: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        guard let integer = Int64(sqlValue: value) else { return nil }
        self = integer != 0
    }
}
extension Double: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        switch value {
        case .integer(let integer): self = Double(integer)
        case .real(let real): self = real
        default: return nil
        }
    }
}
extension String: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        guard case .text(let text) = value else { return nil }
        self = text
    }
}
extension AppID: SQLValueDecodable {
    /// An app id read from an integer column, or from a text one holding its digits.
    public init?(sqlValue value: SQLValue) {
        switch value {
        case .integer(let number): self.init(number)
        case .text(let text): self.init(text)
        default: return nil
        }
    }
}
extension Data: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        guard case .blob(let bytes) = value else { return nil }
        self = Data(bytes)
    }
}
extension Optional: SQLValueDecodable where Wrapped: SQLValueDecodable {
    public init?(sqlValue value: SQLValue) {
        if case .null = value { self = .none; return }
        guard let wrapped = Wrapped(sqlValue: value) else { return nil }
        self = .some(wrapped)
    }
}

/// One result row: its column names and values, read by name.
public struct SQLRow: Sendable {
    /// The column names, in order.
    public let columns: [String]
    /// The values, in column order.
    public let values: [SQLValue]

    /// Creates a row.
    public init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// The value of column `name` (`.null` when there is no such column).
    public subscript(_ name: String) -> SQLValue {
        columns.firstIndex(of: name).map { values[$0] } ?? .null
    }

    /// The value of column `name` as `T`; throws when it holds another type.
    public func get<T: SQLValueDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let value = self[name]
        guard let decoded = T(sqlValue: value) else { throw SQLValueMismatch(column: name, found: value, expected: "\(T.self)") }
        return decoded
    }

    /// The value at `index` as `T`; throws when it holds another type.
    public func get<T: SQLValueDecodable>(at index: Int, as type: T.Type = T.self) throws -> T {
        let value = index < values.count ? values[index] : .null
        guard let decoded = T(sqlValue: value) else { throw SQLValueMismatch(column: "#\(index)", found: value, expected: "\(T.self)") }
        return decoded
    }
}
