import JWS

/// Typed, checked access to the members of a postback object.
///
/// A required member's getter returns its value or throws `missing_field`; an optional member's getter returns nil
/// when it is absent or null. Both throw `wrong_type` for a member of the wrong type, so every decoder reports them
/// the same way and none needs a force-unwrap.
struct FieldReader {
    let object: JSONObject

    /// A required string member.
    func string(_ key: String) throws(FieldProblem) -> String { try asString(key, try required(key)) }

    /// An optional string member.
    func optionalString(_ key: String) throws(FieldProblem) -> String? {
        guard let value = optional(key) else { return nil }
        return try asString(key, value)
    }

    /// A required whole number within 64 bits.
    func int64(_ key: String) throws(FieldProblem) -> Int64 { try asInt64(key, try required(key)) }

    /// An optional whole number within 64 bits.
    func optionalInt64(_ key: String) throws(FieldProblem) -> Int64? {
        guard let value = optional(key) else { return nil }
        return try asInt64(key, value)
    }

    /// A required non-negative integer written in plain decimal: `-0` is refused too, so one value has one spelling.
    func identifier(_ key: String) throws(FieldProblem) -> Int64 { try asIdentifier(key, try required(key)) }

    /// An optional non-negative integer written in plain decimal.
    func optionalIdentifier(_ key: String) throws(FieldProblem) -> Int64? {
        guard let value = optional(key) else { return nil }
        return try asIdentifier(key, value)
    }

    /// A required `true` or `false`.
    func bool(_ key: String) throws(FieldProblem) -> Bool { try asBool(key, try required(key)) }

    /// An optional `true` or `false`.
    func optionalBool(_ key: String) throws(FieldProblem) -> Bool? {
        guard let value = optional(key) else { return nil }
        return try asBool(key, value)
    }

    private func required(_ key: String) throws(FieldProblem) -> JSONValue {
        guard let value = optional(key) else { throw FieldProblem(.missingField, field: key, "\(key) is required") }
        return value
    }

    private func optional(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    private func asString(_ key: String, _ value: JSONValue) throws(FieldProblem) -> String {
        guard let string = value.string else { throw wrongType(key, "a string", value) }
        return string
    }

    private func asInt64(_ key: String, _ value: JSONValue) throws(FieldProblem) -> Int64 {
        guard case .number = value else { throw wrongType(key, "an integer", value) }
        guard let integer = value.int64 else {
            throw FieldProblem(.fieldOutOfRange, field: key, "\(key) must be a whole number within 64 bits")
        }
        return integer
    }

    private func asIdentifier(_ key: String, _ value: JSONValue) throws(FieldProblem) -> Int64 {
        let integer = try asInt64(key, value)
        guard integer >= 0, case .number(let literal) = value, literal.utf8.first != UInt8(ascii: "-") else {
            throw FieldProblem(.fieldOutOfRange, field: key, "\(key) must be a non-negative whole number written in plain decimal")
        }
        return integer
    }

    private func asBool(_ key: String, _ value: JSONValue) throws(FieldProblem) -> Bool {
        guard let bool = value.bool else { throw wrongType(key, "true or false", value) }
        return bool
    }

    private func wrongType(_ key: String, _ expected: String, _ value: JSONValue) -> FieldProblem {
        FieldProblem(.wrongType, field: key, "\(key) must be \(expected), not \(value.typeName)")
    }
}

/// Range and shape checks shared by both families.
///
/// Whether `value` has the shape of an ad network id (see ``FieldRules``), for names people give to ad networks.
public func isAdNetworkID(_ value: String) -> Bool {
    let bytes = value.utf8
    return (1...FieldRules.maximumTextBytes).contains(bytes.count)
        && bytes.allSatisfy { FieldRules.isLowercaseLetter($0) || FieldRules.isDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        && bytes.contains(where: FieldRules.isLowercaseLetter)
}

/// Every signed field must have the shape Apple documents before it is trusted: otherwise one signature could be read
/// as another postback (a SKAN 2.0 signature re-encoded as 1.0 with the separator moved into a neighbouring field,
/// or a 4.0 `source-app-id` moved to `source-domain`), and a control character could make two ids collide in storage.
enum FieldRules {
    /// The longest identifier or name accepted in any field, in bytes.
    static let maximumTextBytes = 255

    /// A UUID, `8-4-4-4-12` hexadecimal digits in either case (Apple's examples use both).
    static func uuid(_ value: String, field: String) throws(FieldProblem) {
        let bytes = Array(value.utf8)
        let valid = bytes.count == 36 && bytes.indices.allSatisfy { index in
            [8, 13, 18, 23].contains(index) ? bytes[index] == UInt8(ascii: "-") : isHexDigit(bytes[index])
        }
        guard valid else { throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be a UUID, got \(quoted(value))") }
    }

    /// An ad network id: lowercase letters, digits, `.`, `-` and `_`, with at least one letter (`example123.skadnetwork`,
    /// `com.apple.ads`). Apple requires the lowercase form; anything else is not a network it delivers for.
    static func adNetworkID(_ value: String, field: String) throws(FieldProblem) {
        guard isAdNetworkID(value) else {
            throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be a lowercase ad network id such as example123.skadnetwork, got \(quoted(value))")
        }
    }

    /// A web ad's domain name: dot-separated labels of letters, digits and hyphens, not all digits, so it can never
    /// read the same as a `source-app-id` in the signed string.
    static func domainName(_ value: String, field: String) throws(FieldProblem) {
        let labels = value.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let valid = (1...253).contains(value.utf8.count)
            && labels.allSatisfy { label in
                (1...63).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
                    && label.allSatisfy { isLowercaseLetter($0 | 0x20) || isDigit($0) || $0 == UInt8(ascii: "-") }
            }
            && value.utf8.contains { isLowercaseLetter($0 | 0x20) }
        guard valid else {
            throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be a domain name such as example.com, got \(quoted(value))")
        }
    }

    /// Printable text of at most ``maximumTextBytes`` bytes: no control character, no U+2063 separator.
    /// For fields with no documented shape (bundle ids, impression types, ids of SKAdNetwork versions not known yet).
    static func printable(_ value: String, field: String) throws(FieldProblem) {
        let valid = (1...maximumTextBytes).contains(value.utf8.count)
            && value.unicodeScalars.allSatisfy { !($0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2063}") }
        guard valid else {
            throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be 1 to \(maximumTextBytes) bytes of printable text, got \(quoted(value))")
        }
    }

    /// A value for an error message: quoted, control characters escaped, cut to 64 characters.
    static func quoted(_ value: String) -> String {
        let shown = value.unicodeScalars.prefix(64)
        var text = ""
        JSONValue.writeString(String(String.UnicodeScalarView(shown)), into: &text)
        return shown.count < value.unicodeScalars.count ? text + "..." : text
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    static func isLowercaseLetter(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
    private static func isHexDigit(_ byte: UInt8) -> Bool { isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f")) }

    static func sourceIdentifier(_ value: String, field: String) throws(FieldProblem) {
        guard (2...4).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be 2 to 4 digits, got \(quoted(value))")
        }
    }

    static func sequenceIndex(_ value: Int64, field: String) throws(FieldProblem) {
        guard (0...2).contains(value) else {
            throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be 0, 1 or 2, got \(value)")
        }
    }

    static func conversionType(_ value: ConversionType) throws(FieldProblem) {
        guard value.kind != nil else {
            throw FieldProblem(.fieldOutOfRange, field: "conversion-type",
                "conversion-type must be download, redownload or re-engagement, got \(quoted(value.rawValue))")
        }
    }

    /// Reads and checks the unsigned value fields both families carry.
    static func unsignedValues(_ reader: FieldReader, into postback: inout Postback) throws(FieldProblem) {
        if let fine = try reader.optionalInt64("conversion-value") {
            guard (0...63).contains(fine) else {
                throw FieldProblem(.fieldOutOfRange, field: "conversion-value", "conversion-value must be 0 to 63, got \(fine)")
            }
            postback.conversionValue = Int(fine)
        }
        if let coarse = try reader.optionalString("coarse-conversion-value") {
            let value = CoarseValue(rawValue: coarse)
            guard value.level != nil else {
                throw FieldProblem(.fieldOutOfRange, field: "coarse-conversion-value",
                    "coarse-conversion-value must be low, medium or high, got \(quoted(coarse))")
            }
            postback.coarseConversionValue = value
        }
        if postback.conversionValue != nil, postback.coarseConversionValue != nil {
            throw FieldProblem(.conflictingFields, field: "coarse-conversion-value",
                "a postback carries conversion-value or coarse-conversion-value, never both")
        }
        if let country = try reader.optionalString("country-code") {
            guard country.utf8.count == 2, country.utf8.allSatisfy({ isLowercaseLetter($0 | 0x20) }) else {
                throw FieldProblem(.fieldOutOfRange, field: "country-code", "country-code must be two letters, got \(quoted(country))")
            }
            // ISO 3166 codes are upper case; `us` and `US` are one country in every column and filter.
            postback.countryCode = country.uppercased()
        }
    }
}
