import Foundation

/// The slowest time recorded in each wall-clock second of a run, in microseconds: where a tail comes from (one stall,
/// or a steady spread). Printed with the UTC time of its first second, so series from separate processes line up.
struct SlowestBySecond: CustomStringConvertible {
    /// The wall-clock second (since 1970) of the first entry.
    let firstSecond: Int
    /// The slowest time of each second from `firstSecond` on; 0 where nothing was recorded.
    private(set) var values: [UInt64] = []

    /// A series whose first second holds the wall-clock time `start` (seconds since 1970).
    init(start: Double) {
        firstSecond = Int(start)
    }

    /// Records `micros` in every second from the wall-clock time `from` through `through` (seconds since 1970, from
    /// the series' start on).
    mutating func record(_ micros: UInt64, from: Double, through: Double) {
        let first = Int(from) - firstSecond, last = Int(through) - firstSecond
        if values.count <= last { values.append(contentsOf: repeatElement(0, count: last + 1 - values.count)) }
        for second in first...last { values[second] = max(values[second], micros) }
    }

    /// `HH:MM:SS:a,b,...`: the UTC time of the first second, then each second's slowest time in milliseconds.
    var description: String {
        let start = firstSecond % 86_400
        let clock = String(format: "%02d:%02d:%02d", start / 3600, start / 60 % 60, start % 60)
        return clock + ":" + values.map { String(format: "%.1f", Double($0) / 1000) }.joined(separator: ",")
    }
}
