import Foundation

/// The machine's CPU time so far, from the first line of Linux's `/proc/stat`: how busy all cores were between two
/// readings, whatever process used them (server, database, load, kernel threads).
struct MachineCPU {
    /// Clock ticks spent on anything but idling or waiting for I/O.
    let busy: UInt64
    /// All clock ticks.
    let total: UInt64

    /// The current reading, or nil where `/proc/stat` cannot be read.
    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq steal ...
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { UInt64($0) }
        guard ticks.count == 8 else { return nil }
        let total = ticks.reduce(0, +)
        return MachineCPU(busy: total - ticks[3] - ticks[4], total: total)
    }

    /// The share of all cores' time that was busy from `earlier` to this reading, 0 to 1.
    func busyShare(since earlier: MachineCPU) -> Double {
        total > earlier.total ? Double(busy - earlier.busy) / Double(total - earlier.total) : 0
    }
}
