import CountersignServer
import Foundation

/// The `--ack-log` file of `simulate`: the dedup key of every postback answered 200, one a line, so a crash test can
/// prove nothing acknowledged was lost. A write that fails (a full disk) stops the log at its last whole line and is
/// kept as ``failure``; the keys after it are counted, never half written, and nothing traps.
final class AckLog {
    let path: String
    private let handle: FileHandle
    private var offset: UInt64
    /// Why the log stopped, once a write failed.
    private(set) var failure: String?
    /// Keys acknowledged but not logged since the failure.
    private(set) var unwritten = 0

    /// Opens `path` for appending, creating it if needed.
    init(path: String) throws(CLIFailure) {
        if !FileManager.default.fileExists(atPath: path), !FileManager.default.createFile(atPath: path, contents: nil) {
            throw CLIFailure.usage("cannot create \(path)")
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CLIFailure.usage("cannot write \(path)") }
        do {
            offset = try handle.seekToEnd()
        } catch {
            throw CLIFailure.usage("cannot write \(path): \(Self.describe(error))")
        }
        self.path = path
        self.handle = handle
    }

    /// Appends one key, or counts it once the log has failed.
    func append(_ key: String) {
        guard failure == nil else { unwritten += 1; return }
        let line = Data((key + "\n").utf8)
        do {
            try handle.write(contentsOf: line)
            offset += UInt64(line.count)
        } catch {
            failure = Self.describe(error)
            unwritten += 1
            try? handle.truncate(atOffset: offset)
        }
    }

    /// Flushes what was written to the disk and closes the file; a failure here is a failure of the log too.
    func close() {
        do {
            try handle.synchronize()
        } catch {
            if failure == nil { failure = Self.describe(error) }
        }
        try? handle.close()
    }

    /// The system's words for a failed write (`No space left on device`).
    static func describe(_ error: any Error) -> String {
        let error = error as NSError
        if let posix = error.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        if error.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(error.code))) }
        return error.localizedDescription
    }
}
