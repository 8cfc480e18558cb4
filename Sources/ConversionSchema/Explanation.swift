import JWS

/// JSON for a decoded conversion, as `schema explain` prints it and the API returns it.
public enum Explanation {
    public static func document(_ decoded: DecodedConversion) -> JSONObject {
        var document = JSONObject()
        document.set("schema_version", .number(String(decoded.schemaVersion)))
        document.set("conversion_class", .string(decoded.conversionClass.rawValue))
        document.set("window", .number(String(decoded.window)))
        document.set("value_kind", .string(decoded.valueKind))
        document.set("events", .array(decoded.events.map { event in
            var object = JSONObject([JSONMember(key: "name", value: .string(event.name))])
            if let count = event.count { object.set("count", .number(String(count))) }
            if let revenue = event.revenue { object.set("revenue", range(revenue)) }
            if !event.properties.isEmpty { object.set("properties", properties(event.properties)) }
            return .object(object)
        }))
        document.set("properties", properties(decoded.properties))
        document.set("revenue", decoded.revenue.map(range) ?? .null)
        document.set("source", sourceLevels(decoded.source))
        return document
    }

    /// The named source-identifier levels as a JSON array of `{level, digits, name}`.
    public static func sourceLevels(_ levels: [DecodedSourceLevel]) -> JSONValue {
        .array(levels.map { level in
            .object(JSONObject([
                JSONMember(key: "level", value: .string(level.level)),
                JSONMember(key: "digits", value: .string(level.digits)),
                JSONMember(key: "name", value: level.name.map { .string($0) } ?? .null),
            ]))
        })
    }

    static func range(_ revenue: RevenueRange) -> JSONValue {
        .object(JSONObject([
            JSONMember(key: "min", value: .number(amount(revenue.min))),
            JSONMember(key: "max", value: .number(amount(revenue.max))),
            JSONMember(key: "midpoint", value: .number(amount(revenue.midpoint))),
            JSONMember(key: "currency", value: .string(revenue.currency)),
        ]))
    }

    static func amount(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return Int64(exactly: rounded).map(String.init) ?? String(rounded)
    }

    static func properties(_ properties: [String: String]) -> JSONValue {
        .object(JSONObject(properties.sorted { $0.key < $1.key }.map { JSONMember(key: $0.key, value: .string($0.value)) }))
    }
}
