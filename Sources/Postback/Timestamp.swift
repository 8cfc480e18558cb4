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

    /// Parses `2026-11-01`, `2026-11-01T10:00:00Z` or the stored form; nil when it is none of these.
    public static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        if let date = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return date }
        return nil
    }
}
