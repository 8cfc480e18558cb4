import Foundation

/// `?` placeholders numbered `$1`, `$2`, ... for PostgreSQL, where they are code: a `?` inside a string (`'...'`, with
/// `''` inside it, or `E'...'` with backslash escapes), a quoted name, a comment (`--`, `/* */`, nested) or a
/// dollar-quoted body (`$$...$$`, `$tag$...$tag$`) is text. `??` is jsonb's `?` operator, written once.
enum Placeholders {
    /// Whether each byte of `sql` is code (true) or inside text, a name, a comment or a dollar-quoted body (false).
    static func codeMask(_ sql: [UInt8]) -> [Bool] {
        var mask = [Bool](repeating: false, count: sql.count)
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte >= 0x80
        }
        var index = 0
        while index < sql.count {
            let byte = sql[index]
            let next: UInt8? = index + 1 < sql.count ? sql[index + 1] : nil
            switch byte {
            case UInt8(ascii: "'"):
                // E'...' takes backslash escapes; the E must start a word of its own.
                let escaped = index > 0 && (sql[index - 1] == UInt8(ascii: "E") || sql[index - 1] == UInt8(ascii: "e"))
                    && (index < 2 || !isWord(sql[index - 2]))
                index += 1
                // '' inside either kind of string is a quote, not its end.
                while index < sql.count {
                    if escaped, sql[index] == UInt8(ascii: "\\") {
                        index += 2
                    } else if sql[index] == UInt8(ascii: "'") {
                        guard index + 1 < sql.count, sql[index + 1] == UInt8(ascii: "'") else { break }
                        index += 2
                    } else {
                        index += 1
                    }
                }
                index += 1
            case UInt8(ascii: "\""):
                index += 1
                while index < sql.count, sql[index] != UInt8(ascii: "\"") { index += 1 }
                index += 1
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                while index < sql.count, sql[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                var depth = 0
                while index < sql.count {
                    if sql[index] == UInt8(ascii: "/"), index + 1 < sql.count, sql[index + 1] == UInt8(ascii: "*") {
                        depth += 1
                        index += 2
                    } else if sql[index] == UInt8(ascii: "*"), index + 1 < sql.count, sql[index + 1] == UInt8(ascii: "/") {
                        depth -= 1
                        index += 2
                        if depth == 0 { break }
                    } else {
                        index += 1
                    }
                }
            case UInt8(ascii: "$") where index == 0 || !(isWord(sql[index - 1]) || sql[index - 1] == UInt8(ascii: "$")):
                // A tag: $$ or $name$, the name not starting with a digit ($1 is a parameter).
                var end = index + 1
                while end < sql.count, isWord(sql[end]), !(end == index + 1 && sql[end] >= 0x30 && sql[end] <= 0x39) { end += 1 }
                guard end < sql.count, sql[end] == UInt8(ascii: "$") else {
                    mask[index] = true
                    index += 1
                    continue
                }
                let tag = sql[index...end]
                var close = end + 1
                while close < sql.count, !sql[close...].starts(with: tag) { close += 1 }
                index = min(sql.count, close + tag.count)
            default:
                mask[index] = true
                index += 1
            }
        }
        return mask
    }

    /// The statements of a script, split at `;` where it is code.
    static func statements(_ script: String) -> [String] {
        let bytes = Array(script.utf8)
        let mask = codeMask(bytes)
        var statements: [String] = []
        var start = 0
        for index in bytes.indices where mask[index] && bytes[index] == UInt8(ascii: ";") {
            statements.append(String(decoding: bytes[start..<index], as: UTF8.self))
            start = index + 1
        }
        statements.append(String(decoding: bytes[start...], as: UTF8.self))
        return statements.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    /// Whether every `?` placeholder in `sql` is cast (`?::bigint[]`), so the server's reading of each argument does not
    /// depend on where it appears.
    static func everyOneCast(_ sql: String) -> Bool {
        let bytes = Array(sql.utf8)
        let mask = codeMask(bytes)
        var index = 0
        while index < bytes.count {
            defer { index += 1 }
            guard mask[index], bytes[index] == UInt8(ascii: "?") else { continue }
            if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "?") {
                index += 1
                continue
            }
            if !bytes[(index + 1)...].starts(with: "::".utf8) { return false }
        }
        return true
    }

    /// `sql` with each placeholder numbered and each `??` made `?`.
    static func numbered(_ sql: String) -> String {
        let question = UInt8(ascii: "?")
        guard sql.utf8.contains(question) else { return sql }
        // Bytes, not Characters: a batch insert's text runs to tens of kilobytes.
        let bytes = Array(sql.utf8)
        let mask = codeMask(bytes)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        var count = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard mask[index - 1], byte == question else {
                output.append(byte)
                continue
            }
            if index < bytes.count, bytes[index] == question {
                output.append(question)
                index += 1
                continue
            }
            count += 1
            output.append(UInt8(ascii: "$"))
            output.append(contentsOf: String(count).utf8)
        }
        return String(decoding: output, as: UTF8.self)
    }
}
