import Foundation

/// The machine's CPU time so far, from the first line of Linux's `/proc/stat`: how busy all cores were between two
/// readings, whatever process used them (server, database, load, kernel threads). Time the hypervisor gave to other
/// machines (steal) counts neither as busy nor at all.
struct MachineCPU {
    /// Clock ticks spent running: user, nice, system, irq and softirq.
    let busy: UInt64
    /// Those and the ticks spent idle or waiting for I/O.
    let total: UInt64

    /// The current reading, or nil where `/proc/stat` cannot be read.
    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq (steal, guest and guest_nice follow; guest time is in user's)
        let ticks = line.split(separator: " ").dropFirst().prefix(7).compactMap { UInt64($0) }
        guard ticks.count == 7 else { return nil }
        let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
        return MachineCPU(busy: busy, total: busy + ticks[3] + ticks[4])
    }

    /// The share of all cores' time that was busy from `earlier` to this reading, 0 to 1; nil when no tick passed or
    /// a counter went backwards (some kernels' idle and iowait do).
    func busyShare(since earlier: MachineCPU) -> Double? {
        guard total > earlier.total, busy >= earlier.busy else { return nil }
        return min(1, Double(busy - earlier.busy) / Double(total - earlier.total))
    }
}
