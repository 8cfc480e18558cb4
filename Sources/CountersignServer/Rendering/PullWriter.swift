import JWS
import Store

/// The raw pull written for the advertiser (`GET /v1/postbacks`, `countersign pull`): the bodies ``PostbackPull`` lends,
/// as NDJSON or CSV.
public enum PullWriter {
    /// How the postbacks are written.
    public enum Format: String, Sendable {
        /// One JSON object a line, every member of Apple's body kept.
        case ndjson
        /// A header of Apple's fields (``DeliveryTemplate/appleFieldNames``) and the template's keys, then a row a
        /// postback; an AdAttributionKit JWS's signed fields fill their columns beside `jws-string`; members of Apple's
        /// body not among them are left out.
        case csv
    }

    /// Writes every postback `query` selects through `template` in `format`, `page` postbacks a call to `write`.
    public static func write(_ pull: PostbackPull, _ query: ReportQuery, template: DeliveryTemplate, format: Format, page: Int = 2_000,
                             write: ([UInt8]) async throws -> Void) async throws {
        let columns = format == .csv ? Self.columns(template) : []
        if format == .csv { try await write(header(columns)) }
        try await pull.bodies(query, template: template, page: page) { bodies in
            var bytes: [UInt8] = []
            for body in bodies {
                switch format {
                case .ndjson:
                    bytes += body
                    bytes.append(0x0A)
                case .csv:
                    row(body, columns: columns, into: &bytes)
                }
            }
            try await write(bytes)
        }
    }

    /// The CSV's columns: Apple's (when the template starts with them), then the template's keys.
    static func columns(_ template: DeliveryTemplate) -> [String] {
        (template.appleFields ? DeliveryTemplate.appleFieldNames : []) + template.fields.map(\.key)
    }

    /// The CSV header line.
    static func header(_ columns: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, column) in columns.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            CSVField.write(column, into: &bytes)
        }
        bytes.append(0x0A)
        return bytes
    }

    /// One body as a CSV row of `columns`.
    static func row(_ body: [UInt8], columns: [String], into bytes: inout [UInt8]) {
        let object = withSignedFields((try? JSONParser.parse(body))?.object ?? JSONObject([]))
        for (index, column) in columns.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            if let value = object[column] { CSVField.write(cell(value), into: &bytes) }
        }
        bytes.append(0x0A)
    }

    /// `object` with the members of an AdAttributionKit JWS's payload added (those the body does not hold already), so a
    /// CSV row has the signed fields in their columns as well as the `jws-string` that proves them.
    static func withSignedFields(_ object: JSONObject) -> JSONObject {
        guard let jws = object["jws-string"]?.string else { return object }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64.decode(Array(parts[1].utf8), alphabet: .url),
              let signed = (try? JSONParser.parse(payload))?.object else { return object }
        var combined = object
        for member in signed.members where combined[member.key] == nil { combined.set(member.key, member.value) }
        return combined
    }

    /// A member's value as a CSV cell: text as it is, numbers as written, flags as true or false, anything else as JSON.
    static func cell(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): text
        case .number(let literal): literal
        case .bool(let flag): flag ? "true" : "false"
        case .null: ""
        default: value.serialized
        }
    }
}
