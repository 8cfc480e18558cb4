import Foundation
import Histogram

/// The disk's own latency, measured next to a benchmark: every `interval` (or at once after a flush that took longer)
/// it overwrites one 4 KiB block of a small file in `directory` and times the `fdatasync` that makes it durable. A
/// server's tail that lines up with this probe's is the disk's (the file system and the device under it), not the
/// server's; one that does not is the server's own.
///
/// The probe adds its own small load (one block and one flush per interval), far below a server's commits.
struct FsyncProbe {
    /// What a run measured.
    struct Outcome {
        /// `fdatasync` times in microseconds.
        var latency = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        /// The slowest flush of each wall-clock second of the run; a flush counts in every second it overlapped.
        var slowestBySecond = SlowestBySecond(start: 0)
    }

    /// The directory the probe's file is made in: the one the database lives on.
    let directory: String
    /// How long to probe, in seconds.
    let seconds: Double
    /// Seconds between flushes.
    let interval: Double

    enum ProbeError: Error, CustomStringConvertible {
        case cannotOpen(String, Int32)
        case cannotWrite(Int32)
        var description: String {
            switch self {
            case .cannotOpen(let path, let code): "cannot open \(path): \(String(cString: strerror(code)))"
            case .cannotWrite(let code): "cannot write or flush the probe file: \(String(cString: strerror(code)))"
            }
        }
    }

    /// Flushes every `interval` for `seconds` and returns the times; the probe's file is removed at the end.
    func run() throws -> Outcome {
        let path = (directory as NSString).appendingPathComponent("fsync-probe-\(getpid())")
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw ProbeError.cannotOpen(path, errno) }
        defer {
            close(descriptor)
            unlink(path)
        }
        let block = [UInt8](repeating: 0x78, count: 4096)
        // The blocks are written once before timing, so every timed flush overwrites allocated space as a log does.
        for index in 0..<64 {
            guard pwrite(descriptor, block, block.count, off_t(index * block.count)) == block.count else { throw ProbeError.cannotWrite(errno) }
        }
        guard fsync(descriptor) == 0 else { throw ProbeError.cannotWrite(errno) }
        var outcome = Outcome()
        let start = DispatchTime.now().uptimeNanoseconds
        let startWall = Date().timeIntervalSince1970
        outcome.slowestBySecond = SlowestBySecond(start: startWall)
        var index = 0
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let elapsed = Double(now - start) / 1e9
            if elapsed >= seconds { break }
            guard pwrite(descriptor, block, block.count, off_t(index % 64 * block.count)) == block.count else { throw ProbeError.cannotWrite(errno) }
            index += 1
            guard Self.flushData(descriptor) == 0 else { throw ProbeError.cannotWrite(errno) }
            let finished = DispatchTime.now().uptimeNanoseconds
            let micros = (finished - now) / 1_000
            _ = outcome.latency.record(micros)
            outcome.slowestBySecond.record(micros, from: startWall + elapsed, through: startWall + Double(finished - start) / 1e9)
            // Flushes are due every `interval` from the start; one that ran late is followed at once by the next.
            let due = start + UInt64(Double(index) * interval * 1e9)
            let after = DispatchTime.now().uptimeNanoseconds
            if due > after { usleep(useconds_t((due - after) / 1_000)) }
        }
        return outcome
    }

    /// Makes the file's data durable: `fdatasync` where there is one (Linux), `fsync` elsewhere.
    private static func flushData(_ descriptor: Int32) -> Int32 {
        #if os(Linux)
        fdatasync(descriptor)
        #else
        fsync(descriptor)
        #endif
    }
}
