#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Timestamps as sortable ISO 8601 text in UTC with milliseconds, which SQLite's date functions read.
public enum Timestamp {
    /// `2026-11-22T05:06:32.123Z`.
    public static func format(_ date: Date) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var whole = time_t(totalMilliseconds / 1000)
        let milliseconds = Int(totalMilliseconds % 1000)
        var parts = tm()
        gmtime_r(&whole, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds), 3))Z"
    }

    /// Parses what people and Apple write: a date (`2026-11-01`, midnight), or a date and time with `T` or a space,
    /// with or without seconds and fraction, and with `Z`, an offset (`+02:00`, `+0200`) or no zone. Text without a
    /// zone is wall-clock time in `zone` (UTC when nil). Returns nil for anything else, such as `2026-11-01T8:30` or `+2`.
    public static func parse(_ text: String, assuming zone: TimeZone? = nil) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0, assuming: zone) }
    }

    /// ``parse(_:assuming:)`` over the text's UTF-8, read where it lies.
    public static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>, assuming zone: TimeZone? = nil) -> Date? {
        var reader = Reader(bytes: bytes)
        guard let year = reader.digits(4), reader.skip("-"), let month = reader.digits(2), reader.skip("-"), let day = reader.digits(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else { return nil }
        var seconds = 0
        var fraction = 0.0
        var offset: Int?
        if !reader.atEnd {
            guard reader.skip("T") || reader.skip(" "), let hour = reader.digits(2), reader.skip(":"), let minute = reader.digits(2),
                  hour < 24, minute < 60 else { return nil }
            seconds = hour * 3600 + minute * 60
            if reader.skip(":") {
                guard let second = reader.digits(2), second < 60 else { return nil }
                seconds += second
                if reader.skip(".") {
                    let start = reader.offset
                    while let byte = reader.peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { reader.offset += 1 }
                    guard reader.offset > start else { return nil }
                    let digits = UnsafeBufferPointer(rebasing: reader.bytes[start..<reader.offset])
                    // Up to 15 digits are a whole number a double holds exactly, so one division rounds as `Double`'s
                    // reading of the text does; longer fractions are read as text.
                    if digits.count <= 15 {
                        fraction = Double(digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }) / powersOfTen[digits.count]
                    } else {
                        guard let value = Double("0." + String(decoding: digits, as: UTF8.self)) else { return nil }
                        fraction = value
                    }
                }
            }
            if reader.skip("Z") {
                offset = 0
            } else if let sign = reader.peek, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                reader.offset += 1
                guard let hours = reader.digits(2) else { return nil }
                _ = reader.skip(":")
                guard let minutes = reader.digits(2), hours < 24, minutes < 60 else { return nil }
                offset = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
            }
        }
        guard reader.atEnd else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        let wallClock = Int(timegm(&parts)) + seconds
        return Date(timeIntervalSince1970: Double(wallClock - (offset ?? zoneOffset(zone, wallClock: wallClock))) + fraction)
    }

    /// The offset from UTC of `zone` at the wall-clock time `wallClock` (seconds as if it were UTC); in a gap or an
    /// overlap around a clock change, the offset before the change.
    private static func zoneOffset(_ zone: TimeZone?, wallClock: Int) -> Int {
        guard let zone else { return 0 }
        let guess = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wallClock)))
        return zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wallClock - guess)))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// 10⁰ to 10¹⁵, each exact.
    private static let powersOfTen: [Double] = {
        var powers: [Double] = []
        var power = 1.0
        for _ in 0...15 {
            powers.append(power)
            power *= 10
        }
        return powers
    }()

    /// A cursor over the text's bytes.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var offset = 0

        var atEnd: Bool { offset == bytes.count }
        var peek: UInt8? { offset < bytes.count ? bytes[offset] : nil }

        /// Exactly `count` ASCII digits as a number.
        mutating func digits(_ count: Int) -> Int? {
            guard offset + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[offset..<(offset + count)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            offset += count
            return value
        }

        /// Skips `character` when it comes next.
        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard peek == UInt8(ascii: character) else { return false }
            offset += 1
            return true
        }
    }
}
