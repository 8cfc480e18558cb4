import ConversionSchema
import CountersignEncoder
import Foundation
import JWS
import Postback
import SchemaDesign
import Store
import Synchronization

/// The published form of each app's current schema revision, made once per revision: `GET /v1/schemas/{app}/published`
/// can be open to anyone, so a request costs a look-up of the revision, not a parse and a compile of the schema.
final class PublishedSchemaCache: Sendable {
    /// What one revision publishes.
    struct Entry: Sendable {
        let revision: Int
        let body: [UInt8]
        let tag: String
    }

    /// The most apps held; past it the cache starts again (each entry is one schema's encoder form, tens of KB).
    static let maximumApps = 1_000
    private let entries = Mutex<[AppID: Entry]>([:])

    /// The published form of `app`'s current revision, or nil when it has none.
    func entry(app: AppID, store: StoreDatabase) async throws -> Entry? {
        guard let revision = try await store.schemas.revisions(app: app).last?.revision else { return nil }
        if let held = entries.withLock({ $0[app] }), held.revision == revision { return held }
        guard let stored = try await store.schemas.document(app: app, revision: revision),
              let schema = SchemaReader.check(Array(stored.document.utf8)).schema else { return nil }
        let body = try Self.published(EncodingSchemaCompiler.compile(schema, revision: stored.revision))
        let entry = Entry(revision: stored.revision, body: body, tag: "\"" + sha256(body).prefix(16).map { String(format: "%02x", $0) }.joined() + "\"")
        entries.withLock { entries in
            if entries.count >= Self.maximumApps { entries.removeAll() }
            entries[app] = entry
        }
        return entry
    }

    /// The encoder's form as JSON: keys sorted and dates in ISO 8601, so the same revision gives the same bytes.
    static func published(_ schema: EncodingSchema) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(schema))
    }
}
