/// A finding of the static checks, with the JSON path it concerns.
public struct SchemaDiagnostic: Sendable, Equatable, CustomStringConvertible {
    /// Errors make a schema unusable; warnings do not.
    public enum Severity: String, Sendable { case error, warning }

    public let severity: Severity
    /// A JSONPath-style location, such as `$.versions[0].install.windows.1.coarse.low`.
    public let path: String
    public let message: String

    public var description: String { "\(severity.rawValue): \(path): \(message)" }

    /// Creates a diagnostic.
    public init(severity: Severity, path: String, message: String) {
        self.severity = severity
        self.path = path
        self.message = message
    }
}

/// The result of checking a schema document: the schema when it has no errors, and every diagnostic.
public struct SchemaCheck: Sendable {
    /// The decoded schema, nil when any error was found.
    public let schema: ConversionSchema?
    /// Errors first, then warnings, each in document order.
    public let diagnostics: [SchemaDiagnostic]

    /// The errors only.
    public var errors: [SchemaDiagnostic] { diagnostics.filter { $0.severity == .error } }
    /// The warnings only.
    public var warnings: [SchemaDiagnostic] { diagnostics.filter { $0.severity == .warning } }
}
