import Foundation
import JWS
import Logging

/// A swift-log handler writing one JSON object per line to standard error.
package struct JSONLogHandler: LogHandler {
    let label: String

    /// A handler for the logger `label`.
    package init(label: String) {
        self.label = label
    }

    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var object = JSONObject()
        object.set("time", .string(Date().formatted(.iso8601)))
        object.set("level", .string(event.level.rawValue))
        object.set("label", .string(label))
        object.set("message", .string(event.message.description))
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }).sorted(by: { $0.key < $1.key }) {
            object.set(key, .string(value.description))
        }
        FileHandle.standardError.write(Data((JSONValue.object(object).serialized + "\n").utf8))
    }
}
