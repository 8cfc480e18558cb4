import Logging

/// Wraps a text log handler so no value can start a new line: control characters in the message and in metadata
/// values are written as `\n`, `\u{1b}` and so on. Postback fields are sent by anyone, and a newline in one would
/// otherwise forge a log line of its own.
struct EscapingLogHandler: LogHandler {
    /// The handler that writes the escaped event.
    var inner: any LogHandler

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var escaped = event
        escaped.message = Logger.Message(stringLiteral: Self.escape(event.message.description))
        escaped.metadata = event.metadata?.mapValues { .string(Self.escape($0.description)) }
        inner.log(event: escaped)
    }

    /// `text` with every control character written as an escape.
    static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where isControl(scalar): output += "\\u{\(String(scalar.value, radix: 16))}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}
