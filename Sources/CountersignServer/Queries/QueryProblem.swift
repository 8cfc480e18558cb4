/// Why a parameter was refused, for a 400 or a CLI usage error.
package struct QueryProblem: Error, Sendable, Equatable, CustomStringConvertible {
    package let parameter: String
    package let message: String
    package var description: String { "\(parameter): \(message)" }

    /// `parameter` refused, and why.
    package init(parameter: String, message: String) {
        self.parameter = parameter
        self.message = message
    }
}
