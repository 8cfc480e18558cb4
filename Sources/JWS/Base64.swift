/// Strict base64 and base64url codecs over bytes.
///
/// JWS segments must be unpadded base64url with no whitespace (RFC 7515 §2); SKAdNetwork
/// signatures are standard base64 with padding. Both decoders reject anything else, including
/// non-zero trailing bits, so one byte string has exactly one accepted encoding.
public enum Base64 {
    /// The two alphabets this codec speaks.
    public enum Alphabet: Sendable {
        /// RFC 4648 §5, no padding (JWS).
        case url
        /// RFC 4648 §4, with `=` padding (SKAdNetwork signatures).
        case standard
    }

    private static let invalid: UInt8 = 0xFF

    private static let urlTable: [UInt8] = makeTable(plus: UInt8(ascii: "-"), slash: UInt8(ascii: "_"))
    private static let standardTable: [UInt8] = makeTable(plus: UInt8(ascii: "+"), slash: UInt8(ascii: "/"))

    private static func makeTable(plus: UInt8, slash: UInt8) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        table[Int(plus)] = 62
        table[Int(slash)] = 63
        return table
    }

    /// Decodes `input` strictly in the given alphabet; nil when it is not canonical.
    public static func decode<C: Collection>(_ input: C, alphabet: Alphabet) -> [UInt8]? where C.Element == UInt8 {
        let table = alphabet == .url ? urlTable : standardTable
        var length = input.count
        if alphabet == .standard {
            guard length % 4 == 0 else { return nil }
            var padding = 0
            var index = input.endIndex
            while padding < 2, index != input.startIndex {
                let previous = input.index(index, offsetBy: -1)
                guard input[previous] == UInt8(ascii: "=") else { break }
                padding += 1
                index = previous
            }
            length -= padding
        }
        if length % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(length * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var consumed = 0
        for byte in input {
            if consumed == length { break }
            let value = table[Int(byte)]
            if value == invalid { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
            consumed += 1
        }
        // Leftover bits must be zero, or two encodings would decode to the same bytes.
        if bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return output
    }

    /// Encodes bytes; `.url` leaves out padding, `.standard` pads with `=`.
    public static func encode<C: Collection>(_ bytes: C, alphabet: Alphabet) -> String where C.Element == UInt8 {
        let symbols = Array(
            (alphabet == .url
                ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").utf8)
        var output = [UInt8]()
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let chunk = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(symbols[Int(chunk >> 18 & 63)])
            output.append(symbols[Int(chunk >> 12 & 63)])
            if second != nil { output.append(symbols[Int(chunk >> 6 & 63)]) } else if alphabet == .standard { output.append(UInt8(ascii: "=")) }
            if third != nil { output.append(symbols[Int(chunk & 63)]) } else if alphabet == .standard { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
