import JWS

/// Typed, checked access to the members of a postback object.
///
/// Each accessor returns nil for an absent optional member and a ``FieldProblem`` for a member of the
/// wrong type, so every decoder reports `missing_field` and `wrong_type` the same way.
struct FieldReader {
    let object: JSONObject

    func string(_ key: String, required: Bool = true) throws(FieldProblem) -> String? {
        guard let value = try present(key, required: required) else { return nil }
        guard let string = value.string else { throw wrongType(key, "a string", value) }
        return string
    }

    func int64(_ key: String, required: Bool = true) throws(FieldProblem) -> Int64? {
        guard let value = try present(key, required: required) else { return nil }
        guard case .number = value else { throw wrongType(key, "an integer", value) }
        guard let integer = value.int64 else {
            throw FieldProblem(.fieldOutOfRange, field: key, "\(key) must be a whole number within 64 bits")
        }
        return integer
    }

    func identifier(_ key: String, required: Bool = true) throws(FieldProblem) -> Int64? {
        guard let value = try int64(key, required: required) else { return nil }
        guard value >= 0 else { throw FieldProblem(.fieldOutOfRange, field: key, "\(key) must not be negative") }
        return value
    }

    func bool(_ key: String, required: Bool = true) throws(FieldProblem) -> Bool? {
        guard let value = try present(key, required: required) else { return nil }
        guard let bool = value.bool else { throw wrongType(key, "true or false", value) }
        return bool
    }

    private func present(_ key: String, required: Bool) throws(FieldProblem) -> JSONValue? {
        guard let value = object[key], value != .null else {
            if required { throw FieldProblem(.missingField, field: key, "\(key) is required") }
            return nil
        }
        return value
    }

    private func wrongType(_ key: String, _ expected: String, _ value: JSONValue) -> FieldProblem {
        FieldProblem(.wrongType, field: key, "\(key) must be \(expected), not \(value.typeName)")
    }
}

/// Range and shape checks shared by both families, applied after the signature check.
enum FieldRules {
    static func sourceIdentifier(_ value: String, field: String) throws(FieldProblem) {
        guard (2...4).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw FieldProblem(.fieldOutOfRange, field: field, "\(field) must be 2 to 4 digits, got \"\(value)\"")
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
                "conversion-type must be download, redownload or re-engagement, got \"\(value.rawValue)\"")
        }
    }

    /// Reads and checks the unsigned value fields both families carry.
    static func unsignedValues(_ reader: FieldReader, into postback: inout Postback) throws(FieldProblem) {
        if let fine = try reader.int64("conversion-value", required: false) {
            guard (0...63).contains(fine) else {
                throw FieldProblem(.fieldOutOfRange, field: "conversion-value", "conversion-value must be 0 to 63, got \(fine)")
            }
            postback.conversionValue = Int(fine)
        }
        if let coarse = try reader.string("coarse-conversion-value", required: false) {
            let value = CoarseValue(rawValue: coarse)
            guard value.level != nil else {
                throw FieldProblem(.fieldOutOfRange, field: "coarse-conversion-value",
                    "coarse-conversion-value must be low, medium or high, got \"\(coarse)\"")
            }
            postback.coarseConversionValue = value
        }
        if postback.conversionValue != nil, postback.coarseConversionValue != nil {
            throw FieldProblem(.conflictingFields, field: "coarse-conversion-value",
                "a postback carries conversion-value or coarse-conversion-value, never both")
        }
        if let country = try reader.string("country-code", required: false) {
            guard country.utf8.count == 2, country.utf8.allSatisfy({ ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }) else {
                throw FieldProblem(.fieldOutOfRange, field: "country-code", "country-code must be two letters, got \"\(country)\"")
            }
            postback.countryCode = country
        }
    }
}
