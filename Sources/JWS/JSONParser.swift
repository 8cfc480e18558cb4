#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a JSON text was refused.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset where parsing stopped.
    public let offset: Int
    /// What was wrong there.
    public let message: String
    public var description: String { "\(message) at byte \(offset)" }

    /// The message with the line and column (both from 1; columns count characters) where parsing stopped in `bytes`,
    /// the text that was parsed, for people reading their own file.
    public func located(in bytes: [UInt8]) -> String {
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return "\(message) at line \(line), column \(column)"
    }
}

/// Member names a caller expects, so the parser can hand back one shared `String` instead of allocating
/// a new one for each occurrence (most postback keys are longer than Swift's 15-byte inline strings).
public struct JSONKeyTable: Sendable {
    private let byLength: [[(bytes: [UInt8], string: String)]]

    /// A table of `keys`.
    public init(_ keys: [String]) {
        var byLength = [[(bytes: [UInt8], string: String)]](repeating: [], count: 64)
        for key in keys where key.utf8.count < byLength.count {
            byLength[key.utf8.count].append((Array(key.utf8), key))
        }
        self.byLength = byLength
    }

    /// No keys.
    public static let empty = JSONKeyTable([])

    func lookup(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count < byLength.count else { return nil }
        for candidate in byLength[bytes.count] {
            let equal = candidate.bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            if equal { return candidate.string }
        }
        return nil
    }
}

/// How much one JSON text may hold: the bodies anyone on the internet can send are parsed with ``publicBody``.
public struct JSONLimits: Sendable, Equatable {
    /// Object members and array elements, counted over the whole text.
    public var maximumValues: Int
    /// The longest string (member names included), in bytes as written in the text.
    public var maximumStringBytes: Int
    /// Whether strings are single lines: no tab, line feed or carriage return either (ids, names, values).
    public var singleLineStrings: Bool

    /// Creates limits.
    public init(maximumValues: Int, maximumStringBytes: Int, singleLineStrings: Bool = false) {
        self.maximumValues = maximumValues
        self.maximumStringBytes = maximumStringBytes
        self.singleLineStrings = singleLineStrings
    }

    /// No limit beyond the text's own size (for documents from operators and key holders).
    public static let unlimited = JSONLimits(maximumValues: .max, maximumStringBytes: .max)

    /// Bodies from devices and apps: Apple's postbacks have about 20 members and a `jws-string` of about 1 KB;
    /// forwarded postbacks add a few keys. Beyond these a body is refused before it costs more work.
    /// Every string in them is one line of text.
    public static let publicBody = JSONLimits(maximumValues: 256, maximumStringBytes: 16 * 1024, singleLineStrings: true)
}

/// A strict RFC 8259 parser over UTF-8 bytes, linear in the size of its input.
public struct JSONParser {
    /// Deepest nesting accepted; postbacks are flat, so this only bounds hostile input.
    public static let maximumDepth = 32

    /// Parses a complete JSON text; trailing non-whitespace is an error.
    public static func parse(_ bytes: [UInt8], keys: JSONKeyTable = .empty, limits: JSONLimits = .unlimited) throws(JSONSyntaxError) -> JSONValue {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONSyntaxError) -> JSONValue in try parse(buffer: buffer, keys: keys, limits: limits) }
        }
        return try result.get()
    }

    /// Parses a complete JSON text held in contiguous memory; member names found in `keys` share its strings.
    public static func parse(buffer: UnsafeRawBufferPointer, keys: JSONKeyTable = .empty, limits: JSONLimits = .unlimited) throws(JSONSyntaxError) -> JSONValue {
        var parser = Cursor(bytes: buffer, keys: keys, limits: limits)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.offset == buffer.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    /// A member name compared and hashed by its UTF-8 bytes (Swift's `String` equality is Unicode equivalence).
    private struct ExactName: Hashable {
        let name: String
        static func == (lhs: ExactName, rhs: ExactName) -> Bool { lhs.name.utf8.elementsEqual(rhs.name.utf8) }
        func hash(into hasher: inout Hasher) {
            var name = self.name
            name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// Objects up to this size are checked for duplicate names by a scan; larger ones by a hash set.
    private static let scanLimit = 16

    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        let keys: JSONKeyTable
        let limits: JSONLimits
        var offset = 0
        var valueCount = 0

        init(bytes: UnsafeRawBufferPointer, keys: JSONKeyTable, limits: JSONLimits) {
            self.bytes = bytes
            self.keys = keys
            self.limits = limits
        }

        func error(_ message: String) -> JSONSyntaxError { JSONSyntaxError(offset: offset, message: message) }

        mutating func countValue() throws(JSONSyntaxError) {
            valueCount += 1
            guard valueCount <= limits.maximumValues else { throw error("more than \(limits.maximumValues) members and elements") }
        }

        mutating func skipWhitespace() {
            while offset < bytes.count {
                switch bytes[offset] {
                case 0x20, 0x09, 0x0A, 0x0D: offset += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            guard offset < bytes.count else { throw error("unexpected end of input") }
            switch bytes[offset] {
            case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
            case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw error("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
            let length = word.utf8CodeUnitCount
            guard offset + length <= bytes.count else { throw error("unexpected end of input") }
            for index in 0..<length where bytes[offset + index] != word.utf8Start[index] {
                throw error("invalid literal")
            }
            offset += length
        }

        mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONObject {
            guard depth <= JSONParser.maximumDepth else { throw error("nesting too deep") }
            offset += 1
            var members: [JSONMember] = []
            members.reserveCapacity(16)
            // Names seen so far, once the object outgrows a scan: keeps duplicate detection linear in the body.
            var seen: Set<ExactName>?
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
                offset += 1
                return JSONObject(members)
            }
            while true {
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                try countValue()
                let key = try memberName()
                if var names = seen {
                    seen = nil
                    guard names.insert(ExactName(name: key)).inserted else { throw error("duplicate member \"\(key)\"") }
                    seen = names
                } else {
                    let length = key.utf8.count
                    if members.contains(where: { $0.key.utf8.count == length && $0.key.utf8.elementsEqual(key.utf8) }) {
                        throw error("duplicate member \"\(key)\"")
                    }
                    if members.count + 1 == JSONParser.scanLimit {
                        seen = Set(members.map { ExactName(name: $0.key) } + [ExactName(name: key)])
                    }
                }
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw error("expected ':'") }
                offset += 1
                skipWhitespace()
                members.append(JSONMember(key: key, value: try value(depth: depth)))
                skipWhitespace()
                guard offset < bytes.count else { throw error("unexpected end of input") }
                if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
                if bytes[offset] == UInt8(ascii: "}") { offset += 1; return JSONObject(members) }
                throw error("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(JSONSyntaxError) -> [JSONValue] {
            guard depth <= JSONParser.maximumDepth else { throw error("nesting too deep") }
            offset += 1
            var values: [JSONValue] = []
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
                offset += 1
                return values
            }
            while true {
                skipWhitespace()
                try countValue()
                values.append(try value(depth: depth))
                skipWhitespace()
                guard offset < bytes.count else { throw error("unexpected end of input") }
                if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
                if bytes[offset] == UInt8(ascii: "]") { offset += 1; return values }
                throw error("expected ',' or ']'")
            }
        }

        mutating func number() throws(JSONSyntaxError) -> String {
            let start = offset
            if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw error("invalid number") }
            if bytes[offset] == UInt8(ascii: "0") {
                offset += 1
            } else {
                while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
            }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
                offset += 1
                guard offset < bytes.count, isDigit(bytes[offset]) else { throw error("invalid number") }
                while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
            }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
                offset += 1
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
                guard offset < bytes.count, isDigit(bytes[offset]) else { throw error("invalid number") }
                while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
            }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        /// Skips eight bytes at a time while none is a quote, a backslash, a control character or non-ASCII,
        /// so long values such as a `jws-string` cost about one instruction per byte.
        mutating func skipPlainASCII() {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while offset + 8 <= bytes.count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word) | word
                if special & highs != 0 { return }
                offset += 8
            }
        }

        /// A member name: a known one without escapes comes from the key table, anything else is parsed as a string.
        mutating func memberName() throws(JSONSyntaxError) -> String {
            var end = offset + 1
            while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\""),
               let known = keys.lookup(UnsafeRawBufferPointer(rebasing: bytes[(offset + 1)..<end])) {
                offset = end + 1
                return known
            }
            return try string()
        }

        mutating func string() throws(JSONSyntaxError) -> String {
            offset += 1
            let start = offset
            // Fast path: no escapes, the common case for postbacks (Apple's `\/` takes the slow path).
            skipPlainASCII()
            var highBits: UInt8 = 0
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    try checkLength(from: start)
                    let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
                    offset += 1
                    // ASCII needs no validation; `String(validating:)` is kept for the rare non-ASCII text.
                    return highBits & 0x80 == 0 ? String(decoding: slice, as: UTF8.self) : try validatedUTF8(slice)
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 || byte == 0x7F { throw error("control character in string") }
                highBits |= byte
                offset += 1
            }
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: try validatedUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<offset])).unicodeScalars)
            var runStart = offset
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    try checkLength(from: start)
                    try appendRun(runStart, &scalars)
                    offset += 1
                    return String(scalars)
                }
                if byte < 0x20 || byte == 0x7F { throw error("control character in string") }
                if byte != UInt8(ascii: "\\") { offset += 1; continue }
                try appendRun(runStart, &scalars)
                offset += 1
                guard offset < bytes.count else { throw error("unexpected end of input") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"), UInt8(ascii: "f"): throw error("control character in string")
                case UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    if limits.singleLineStrings { throw error("control character in string") }
                    scalars.append(escape == UInt8(ascii: "n") ? "\n" : escape == UInt8(ascii: "r") ? "\r" : "\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate")
                        }
                        offset += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw error("unpaired surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid escape") }
                    // Tab, line feed and carriage return are text; NUL and the other control characters are not, on
                    // any engine (PostgreSQL refuses NUL in text, SQLite would cut the text at it).
                    if JSONText.isRefusedControl(scalar) || limits.singleLineStrings && scalar.value < 0x20 {
                        throw error(String(format: "control character U+%04X in string", scalar.value))
                    }
                    scalars.append(scalar)
                default: throw error("invalid escape")
                }
                runStart = offset
            }
            throw error("unterminated string")
        }

        func checkLength(from start: Int) throws(JSONSyntaxError) {
            guard offset - start <= limits.maximumStringBytes else { throw error("a string longer than \(limits.maximumStringBytes) bytes") }
        }

        mutating func appendRun(_ start: Int, _ scalars: inout String.UnicodeScalarView) throws(JSONSyntaxError) {
            guard start < offset else { return }
            let run = try validatedUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<offset]))
            scalars.append(contentsOf: run.unicodeScalars)
        }

        func validatedUTF8(_ slice: UnsafeRawBufferPointer) throws(JSONSyntaxError) -> String {
            guard let value = String(validating: slice, as: UTF8.self) else { throw error("invalid UTF-8") }
            if value.unicodeScalars.contains(where: JSONText.isRefusedControl) { throw error("control character in string") }
            return value
        }

        mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
            guard offset + 4 <= bytes.count else { throw error("unexpected end of input") }
            var code: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[offset]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error("invalid \\u escape")
                }
                code = code << 4 | UInt32(digit)
                offset += 1
            }
            return code
        }
    }
}

/// Which characters JSON strings may not hold here, whatever their escape.
public enum JSONText {
    /// NUL and the other C0 control characters except tab, line feed and carriage return; DEL; the C1 controls.
    @inlinable
    public static func isRefusedControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: false
        case 0x00..<0x20, 0x7F...0x9F: true
        default: false
        }
    }

    /// Whether `text` holds any control character at all (tab and line breaks too): what single-line text such as
    /// names, ids and query parameters may not hold.
    public static func hasControlCharacter(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}
