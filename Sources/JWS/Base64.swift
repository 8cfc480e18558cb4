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
    public static func decode(_ input: [UInt8], alphabet: Alphabet) -> [UInt8]? {
        input.withUnsafeBufferPointer { decode(buffer: $0, alphabet: alphabet) }
    }

    /// Decodes contiguous bytes strictly; the decoder every entry point shares.
    public static func decode(buffer input: UnsafeBufferPointer<UInt8>, alphabet: Alphabet) -> [UInt8]? {
        var length = input.count
        if alphabet == .standard {
            guard length % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, length > 0, input[length - 1] == UInt8(ascii: "=") {
                padding += 1
                length -= 1
            }
        }
        let remainder = length % 4
        if remainder == 1 { return nil }
        let outputLength = length / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        return (alphabet == .url ? urlTable : standardTable).withUnsafeBufferPointer { table -> [UInt8]? in
            var valid = true
            let output = [UInt8](unsafeUninitializedCapacity: outputLength) { out, initialized in
                var read = 0
                var written = 0
                // Valid sextets are below 64 and `invalid` has the top bit set, so one OR per character tracks validity.
                var seen: UInt8 = 0
                while read + 4 <= length {
                    let a = table[Int(input[read])], b = table[Int(input[read + 1])]
                    let c = table[Int(input[read + 2])], d = table[Int(input[read + 3])]
                    seen |= a | b | c | d
                    let quad = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[written] = UInt8(truncatingIfNeeded: quad >> 16)
                    out[written + 1] = UInt8(truncatingIfNeeded: quad >> 8)
                    out[written + 2] = UInt8(truncatingIfNeeded: quad)
                    read += 4
                    written += 3
                }
                if seen & 0x80 != 0 { valid = false }
                if valid, remainder > 0 {
                    var quad: UInt32 = 0
                    for offset in 0..<remainder {
                        let value = table[Int(input[read + offset])]
                        if value == invalid { valid = false; break }
                        quad |= UInt32(value) << UInt32(18 - 6 * offset)
                    }
                    // Leftover bits must be zero, or two encodings would decode to the same bytes.
                    let leftoverMask: UInt32 = remainder == 2 ? 0xFFFF : 0xFF
                    if quad & leftoverMask != 0 { valid = false }
                    if valid {
                        out[written] = UInt8(truncatingIfNeeded: quad >> 16)
                        if remainder == 3 { out[written + 1] = UInt8(truncatingIfNeeded: quad >> 8) }
                        written += remainder - 1
                    }
                }
                initialized = valid ? written : 0
            }
            return valid ? output : nil
        }
    }

    /// Encodes bytes; `.url` leaves out padding, `.standard` pads with `=`.
    public static func encode(_ bytes: [UInt8], alphabet: Alphabet) -> String {
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
