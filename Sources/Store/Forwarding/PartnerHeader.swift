/// A header a forwarding rule sends with every delivery, such as `Authorization: Bearer ...` or `ABX-TOKEN: ...`, whose
/// value is the partner's secret: stored apart from the rule, read only to deliver, and never shown (its description
/// is its name alone, so no log line, error or status can print the value).
public struct PartnerHeader: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The header's name.
    public let name: String
    /// The secret value.
    public let value: String

    public var description: String { "\(name): (secret)" }
    /// What `dump` and test failures show: the name alone.
    public var customMirror: Mirror { Mirror(self, children: ["name": name, "value": "(secret)"]) }

    /// Headers Countersign sets itself, or that HTTP forbids a rule to set.
    static let reserved: Set<String> = [
        "content-type", "content-length", "idempotency-key", "countersign-attempt", "countersign-test", "user-agent", "host",
        "transfer-encoding", "connection", "te", "trailer", "upgrade", "keep-alive", "proxy-connection", "expect",
    ]

    /// Why a header was refused.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let field: String
        public let message: String
        public var description: String { "\(field): \(message)" }
    }

    /// A checked header: the name an HTTP token of at most 64 characters that Countersign does not set itself; the value
    /// 1 to 4096 printable ASCII characters or spaces (no line breaks). The value never appears in a problem.
    public init(name: String, value: String) throws(Problem) {
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard (1...64).contains(name.count), name.allSatisfy(token.contains) else {
            throw Problem(field: "header", message: "must be a header name of 1 to 64 token characters (letters, digits and !#$%&'*+-.^_`|~), such as Authorization or ABX-TOKEN")
        }
        guard !Self.reserved.contains(name.lowercased()) else {
            throw Problem(field: "header", message: "\(name) is set by Countersign or by HTTP itself; name the partner's own header")
        }
        guard (1...4096).contains(value.utf8.count), value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }),
              value.first != " ", value.last != " " else {
            throw Problem(field: "secret", message: "must be 1 to 4096 printable ASCII characters, without line breaks or spaces at either end")
        }
        self.name = name
        self.value = value
    }

    /// A header read back from the store (checked when it was set).
    init(stored name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// What a change to a rule does to its header.
    public enum Change: Sendable, Equatable {
        /// Leaves the header and its secret as they are.
        case keep
        /// Sends no header from now on; the secret is deleted.
        case remove
        /// Sends this header (a new name or a replaced secret).
        case set(PartnerHeader)
    }
}
