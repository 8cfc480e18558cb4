import Foundation
import JWS

/// The raw pull an advertiser makes (`GET /v1/postbacks`, `countersign pull`): each stored postback the filters select
/// with Apple's fields as the device sent them, plus the network's ids and names in force, made by a delivery template
/// (``DeliveryTemplate``; `pull` by default), as NDJSON or CSV, oldest first, a page at a time.
public struct PostbackPull: Sendable {
    let engine: any DatabaseEngine

    /// The template a pull uses unless it names another.
    public static let defaultTemplate = "pull"

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
    public func write(_ query: ReportQuery, template: DeliveryTemplate, format: Format, page: Int = 2_000,
                      write: ([UInt8]) async throws -> Void) async throws {
        if format == .csv { try await write(Self.header(template)) }
        var after: Int64 = 0
        while true {
            let cursor = after
            let (bytes, last) = try await engine.read { db in try Self.page(db, query, template: template, format: format, after: cursor, limit: page) }
            if !bytes.isEmpty { try await write(bytes) }
            guard let last else { return }
            after = last
        }
    }

    /// The CSV header line.
    static func header(_ template: DeliveryTemplate) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, column) in columns(template).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            CSVField.write(column, into: &bytes)
        }
        bytes.append(0x0A)
        return bytes
    }

    /// The CSV's columns: Apple's (when the template starts with them), then the template's keys.
    static func columns(_ template: DeliveryTemplate) -> [String] {
        (template.appleFields ? DeliveryTemplate.appleFieldNames : []) + template.fields.map(\.key)
    }

    /// One page after the `after` id: its text, and the id to read on from (nil after the last page).
    static func page(_ db: any SQLSession, _ query: ReportQuery, template: DeliveryTemplate, format: Format, after: Int64,
                     limit: Int) throws -> (bytes: [UInt8], last: Int64?) {
        var (whereSQL, arguments) = query.whereClause()
        whereSQL += (whereSQL.isEmpty ? "WHERE " : " AND ") + "c.id > ?"
        arguments += [after, limit]
        let rows = try db.rows("""
            SELECT c.id, r.body, r.remote_address FROM conversions c JOIN postbacks p ON p.id = c.id LEFT JOIN receipts r ON r.id = p.receipt_id
            \(whereSQL) ORDER BY c.id LIMIT ?
            """, arguments)
        let ids = try rows.map { try $0.get("id", as: Int64.self) }
        let facts = template.needsFacts
            ? try DeliveryFactsReader.facts(db, ids: ids, withCost: template.usesCost)
            : [:]
        let columns = format == .csv ? Self.columns(template) : []
        var bytes: [UInt8] = []
        for (row, id) in zip(rows, ids) {
            var fact = facts[id] ?? .none
            fact[.remoteAddress] = try row.get("remote_address", as: String?.self).map { .string($0) }
            let body = try row.get("body", as: Data?.self).map { Array($0) } ?? Array("{}".utf8)
            let rendered = template.isOriginal ? Self.asObject(body) : template.render(appleBody: body, facts: fact)
            switch format {
            case .ndjson:
                bytes.append(contentsOf: rendered)
                bytes.append(0x0A)
            case .csv:
                let object = Self.withSignedFields((try? JSONParser.parse(rendered))?.object ?? JSONObject([]))
                for (index, column) in columns.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    if let value = object[column] { CSVField.write(Self.cell(value), into: &bytes) }
                }
                bytes.append(0x0A)
            }
        }
        return (bytes, rows.count == limit ? ids.last : nil)
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

    /// Apple's body on one line (`original` sends it as stored, which may span lines).
    static func asObject(_ body: [UInt8]) -> [UInt8] {
        guard let value = try? JSONParser.parse(body) else { return Array("{}".utf8) }
        return Array(value.serialized.utf8)
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
