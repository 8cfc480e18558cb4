import Foundation
import Logging

/// Keeps what it is asked to log, one line per event, for tests.
package final class RecordingLogHandler: LogHandler, @unchecked Sendable {
    package var logLevel: Logger.Level = .trace
    package var metadata: Logger.Metadata = [:]
    private let lock = NSLock()
    private var recorded: [String] = []

    package init() {}

    package var lines: [String] { lock.withLock { recorded } }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        lock.withLock { recorded.append(([event.message.description] + fields).joined(separator: " ")) }
    }
}
