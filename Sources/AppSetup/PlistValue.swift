/// A property-list value as the app's `Info.plist` (XML or binary) or Expo's `ios.infoPlist` JSON holds it, with
/// dictionary keys in their order and Booleans told apart from numbers.
public enum PlistValue: Sendable, Equatable {
    case string(String)
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    case date
    case data
    case array([PlistValue])
    case dictionary([(key: String, value: PlistValue)])

    /// The value for `key` of a dictionary.
    public subscript(key: String) -> PlistValue? {
        guard case .dictionary(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// A short name of the type, for messages: `string`, `Boolean`, `number`, `array`, `dictionary`.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .bool: "Boolean"
        case .integer, .real: "number"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    public static func == (left: PlistValue, right: PlistValue) -> Bool {
        switch (left, right) {
        case (.string(let a), .string(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.real(let a), .real(let b)): a == b
        case (.date, .date), (.data, .data): true
        case (.array(let a), .array(let b)): a == b
        case (.dictionary(let a), .dictionary(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }
}
