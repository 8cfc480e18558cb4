import Logging

/// Wraps a text log handler so no value can start a new line: control characters in the message and in metadata
/// values are written as `\n`, `\u{1b}` and so on. Postback fields are sent by anyone, and a newline in one would
/// otherwise forge a log line of its own.
package struct EscapingLogHandler: LogHandler {
    /// The handler that writes the escaped event.
    var inner: any LogHandler

    /// Escapes what `inner` writes.
    package init(inner: any LogHandler) {
        self.inner = inner
    }

    package var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    package var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    package func log(event: LogEvent) {
        var escaped = event
        escaped.message = Logger.Message(stringLiteral: ControlCharacters.escaped(event.message.description))
        escaped.metadata = event.metadata?.mapValues { .string(ControlCharacters.escaped($0.description)) }
        inner.log(event: escaped)
    }
}
