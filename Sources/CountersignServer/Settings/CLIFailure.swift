/// A failure a command reports with its exit code and one line for people: settings, key files and the store's
/// opening fail this way, whether the CLI or `serve` reads them.
package struct CLIFailure: Error, CustomStringConvertible {
    /// The process exit code.
    package let code: Int32
    /// The message printed on standard error.
    package let message: String
    package var description: String { message }

    /// Exit 1: the command ran and the answer is no.
    package static func rejected(_ message: String) -> CLIFailure { CLIFailure(code: 1, message: message) }
    /// Exit 2: the command could not run as asked.
    package static func usage(_ message: String) -> CLIFailure { CLIFailure(code: 2, message: message) }
}
