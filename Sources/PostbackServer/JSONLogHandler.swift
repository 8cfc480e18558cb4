import Foundation
import JWS
import Logging

/// A swift-log handler writing one JSON object per line to standard error.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
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
