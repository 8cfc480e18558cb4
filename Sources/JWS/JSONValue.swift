/// A parsed JSON value that keeps numbers as their literal text and object members in order.
///
/// Postbacks are small flat objects parsed on every request; this parser works on bytes, keeps
/// unknown members so nothing Apple adds is lost, and refuses duplicate keys and nesting deeper
/// than ``JSONParser/maximumDepth`` so a hostile body cannot make two readers see different values.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, kept as its exact literal so integers round-trip without floating point.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The value as a 64-bit integer when it is an integer literal in range.
    public var int64: Int64? {
        guard case .number(let literal) = self else { return nil }
        // The parser has checked the number's syntax, so only digits, an optional leading minus, and a fraction or
        // exponent (which make it not whole) can appear. Negative numbers accumulate downwards to reach Int64.min.
        var utf8 = Substring(literal).utf8
        let negative = utf8.first == UInt8(ascii: "-")
        if negative { utf8 = utf8.dropFirst() }
        guard !utf8.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte &- UInt8(ascii: "0"))
            let (shifted, overflowShift) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowAdd) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowShift, !overflowAdd else { return nil }
            value = next
        }
        return value
    }

    /// The string, when this is a string.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The Boolean, when this is `true` or `false`.
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The object, when this is an object.
    public var object: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// A short name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Compact JSON text for this value; object members keep their order.
    public var serialized: String {
        var bytes: [UInt8] = []
        write(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Indented JSON text (two spaces), for people.
    public var prettyPrinted: String {
        var bytes: [UInt8] = []
        write(into: &bytes, depth: 0)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends this value's compact JSON text as UTF-8: what ``serialized`` holds, without a `String` in between.
    public func write(into output: inout [UInt8]) {
        write(into: &output, depth: nil)
    }

    /// Appends the value; `depth` is the indentation level for pretty text, nil for compact.
    private func write(into output: inout [UInt8], depth: Int?) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let literal): output.append(contentsOf: literal.utf8)
        case .string(let value): JSONValue.writeString(value, into: &output)
        case .array(let values):
            if values.isEmpty { output.append(contentsOf: "[]".utf8); return }
            output.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.newline(into: &output, depth: depth.map { $0 + 1 })
                value.write(into: &output, depth: depth.map { $0 + 1 })
            }
            Self.newline(into: &output, depth: depth)
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            if object.members.isEmpty { output.append(contentsOf: "{}".utf8); return }
            output.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.newline(into: &output, depth: depth.map { $0 + 1 })
                JSONValue.writeString(member.key, into: &output)
                output.append(UInt8(ascii: ":"))
                if depth != nil { output.append(UInt8(ascii: " ")) }
                member.value.write(into: &output, depth: depth.map { $0 + 1 })
            }
            Self.newline(into: &output, depth: depth)
            output.append(UInt8(ascii: "}"))
        }
    }

    /// For pretty text, a line break and two spaces per level; nothing for compact.
    private static func newline(into output: inout [UInt8], depth: Int?) {
        guard let depth else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    /// Appends `value` as a JSON string literal.
    public static func writeString(_ value: String, into output: inout String) {
        var bytes: [UInt8] = []
        writeString(value, into: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `value` as a JSON string literal, in UTF-8.
    public static func writeString(_ value: String, into output: inout [UInt8]) {
        var value = value
        value.withUTF8 { writeString(utf8: $0, into: &output) }
    }

    /// Appends the text whose valid UTF-8 is `bytes` as a JSON string literal. Only ASCII bytes are escaped, and no
    /// byte of a multi-byte UTF-8 sequence is ASCII, so escaping byte by byte is escaping scalar by scalar.
    public static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var start = 0
        for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            output.append(contentsOf: bytes[start..<index])
            start = index + 1
            output.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
            case UInt8(ascii: "\n"): output.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): output.append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): output.append(UInt8(ascii: "t"))
            default:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        output.append(contentsOf: bytes[start...])
        output.append(UInt8(ascii: "\""))
    }
}

/// One member of a JSON object.
public struct JSONMember: Sendable, Equatable {
    /// The member's name.
    public var key: String
    /// The member's value.
    public var value: JSONValue

    /// Creates a member.
    public init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// A JSON object with its members in document order and unique keys.
public struct JSONObject: Sendable, Equatable {
    /// The members in the order they were read or added.
    public var members: [JSONMember]

    /// Creates an object from members (the caller keeps keys unique).
    public init(_ members: [JSONMember] = []) {
        self.members = members
    }

    /// The value for `key`, if present. Names compare byte for byte, never by Unicode equivalence, so `K` and
    /// KELVIN SIGN are different members as they are to every other JSON reader.
    public subscript(key: String) -> JSONValue? {
        let length = key.utf8.count
        for member in members where member.key.utf8.count == length && member.key.utf8.elementsEqual(key.utf8) { return member.value }
        return nil
    }

    /// Sets or appends `key` (compared byte for byte).
    public mutating func set(_ key: String, _ value: JSONValue) {
        if let index = members.firstIndex(where: { $0.key.utf8.elementsEqual(key.utf8) }) {
            members[index].value = value
        } else {
            members.append(JSONMember(key: key, value: value))
        }
    }
}
