import Foundation
import JWS

/// The raw pull an advertiser makes (`GET /v1/postbacks`, `countersign pull`): each stored postback the filters select
/// with Apple's fields as the device sent them, plus the network's ids and names in force, made by a delivery template
/// (``DeliveryTemplate``; `pull` by default), oldest first, a page at a time. The bodies are lent as JSON objects; the
/// edge writes them as NDJSON or CSV.
public struct PostbackPull: Sendable {
    let engine: any DatabaseEngine

    /// The template a pull uses unless it names another.
    public static let defaultTemplate = "pull"

    /// Hands `bodies` every postback `query` selects made by `template`, each one JSON object on one line, at most `page`
    /// postbacks a call.
    public func bodies(_ query: ReportQuery, template: DeliveryTemplate, page: Int = 2_000,
                       _ bodies: ([[UInt8]]) async throws -> Void) async throws {
        var after: Int64 = 0
        while true {
            let cursor = after
            let (rendered, last) = try await engine.read { db in try Self.page(db, query, template: template, after: cursor, limit: page) }
            if !rendered.isEmpty { try await bodies(rendered) }
            guard let last else { return }
            after = last
        }
    }

    /// One page after the `after` id: its bodies, and the id to read on from (nil after the last page).
    static func page(_ db: any SQLSession, _ query: ReportQuery, template: DeliveryTemplate, after: Int64,
                     limit: Int) throws -> (bodies: [[UInt8]], last: Int64?) {
        var (whereSQL, arguments) = query.whereClause()
        whereSQL += (whereSQL.isEmpty ? "WHERE " : " AND ") + "c.id > ?"
        arguments += [after, limit]
        let rows = try db.rows("""
            SELECT c.id, r.body, r.remote_address FROM conversions c JOIN postbacks p ON p.id = c.id LEFT JOIN receipts r ON r.id = p.receipt_id
            \(whereSQL) ORDER BY c.id LIMIT ?
            """, arguments)
        let ids = try rows.map { try $0.get("id", as: Int64.self) }
        var facts = template.needsFacts
            ? try DeliveryFactsReader.facts(db, ids: ids, withCost: template.usesCost)
            : [:]
        var bodies: [[UInt8]] = []
        bodies.reserveCapacity(rows.count)
        for (row, id) in zip(rows, ids) {
            var fact = facts.removeValue(forKey: id) ?? .none
            fact[.remoteAddress] = try row.get("remote_address", as: String?.self).map { .string($0) }
            let body = try row.get("body", as: Data?.self).map { Array($0) } ?? Array("{}".utf8)
            bodies.append(template.isOriginal ? Self.asObject(body) : template.render(appleBody: body, facts: fact))
        }
        return (bodies, rows.count == limit ? ids.last : nil)
    }

    /// Apple's body on one line (`original` sends it as stored, which may span lines).
    static func asObject(_ body: [UInt8]) -> [UInt8] {
        guard let value = try? JSONParser.parse(body) else { return Array("{}".utf8) }
        return Array(value.serialized.utf8)
    }
}
