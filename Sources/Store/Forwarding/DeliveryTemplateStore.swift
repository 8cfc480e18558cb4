import Foundation
import JWS
import Postback
import Synchronization

/// The delivery templates a rule can name: `original`, those shipped with Countersign, and a network's own, added
/// without a release and shared by every receiver (they live in the database).
public struct DeliveryTemplateStore: Sendable {
    let engine: any DatabaseEngine

    /// A network's own templates at most.
    public static let maximumTemplates = 100

    /// `original` and the templates shipped with this release, by name.
    public static let shipped: [DeliveryTemplate] = [DeliveryTemplate.originalTemplate] + [
        PackageResources.airbridge_json, PackageResources.appmetrica_json, PackageResources.branch_json, PackageResources.enriched_json,
        PackageResources.pull_json, PackageResources.unity_json,
    ].compactMap { try? DeliveryTemplate.parse($0) }

    /// A template and where it comes from.
    public struct Listed: Sendable, Equatable {
        public let template: DeliveryTemplate
        /// Shipped with Countersign (read-only), or added by the network.
        public let shipped: Bool
        /// When a network's own template was last set (ISO 8601 UTC); nil for a shipped one.
        public let updatedAt: String?
    }

    /// What a change to the templates could not do.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The name is a shipped template's.
        case shipped(String)
        /// The most templates exist already.
        case tooMany(maximum: Int)
        /// Rules still name the template.
        case inUse(template: String, rules: [String])

        public var description: String {
            switch self {
            case .shipped(let name): "\(name) is shipped with Countersign and cannot be changed; copy it under a name of your own"
            case .tooMany(let maximum): "there are \(maximum) templates of your own, the most allowed; remove one first"
            case .inUse(let template, let rules): "rules \(rules.joined(separator: ", ")) use \(template); point them at another template first"
            }
        }
    }

    /// Every template: the shipped ones, then the network's own, by name.
    public func all() async throws -> [Listed] {
        let own = try await engine.read { db in
            try db.rows("SELECT body, updated_at FROM forward_templates ORDER BY name", []).map { row in
                (try row.get("body", as: String.self), try row.get("updated_at", as: String.self))
            }
        }
        return Self.shipped.map { Listed(template: $0, shipped: true, updatedAt: nil) }
            + own.compactMap { body, updated in (try? DeliveryTemplate.parse(Array(body.utf8))).map { Listed(template: $0, shipped: false, updatedAt: updated) } }
    }

    /// The template `name`, or nil when there is none.
    public func named(_ name: String) async throws -> DeliveryTemplate? {
        if let shipped = Self.shipped.first(where: { $0.name == name }) { return shipped }
        return try await engine.read { db in try Self.load(db, name: name) }
    }

    /// The network's templates as last parsed, by name, with the `updated_at` they were parsed at: a claim reads only
    /// the time, and a file is parsed again only after it changed. At most ``maximumTemplates`` entries (a removed
    /// template's entry goes when the cache would grow beyond).
    private static let parsed = Mutex<[String: (updatedAt: String, template: DeliveryTemplate)]>([:])

    /// The template `name` in the caller's session.
    static func load(_ db: any SQLSession, name: String) throws -> DeliveryTemplate? {
        if let shipped = shipped.first(where: { $0.name == name }) { return shipped }
        guard let updatedAt = try db.value("SELECT updated_at FROM forward_templates WHERE name = ?", [name], as: String.self) else { return nil }
        if let cached = parsed.withLock({ $0[name] }), cached.updatedAt == updatedAt { return cached.template }
        guard let body = try db.value("SELECT body FROM forward_templates WHERE name = ?", [name], as: String.self),
              let template = try? DeliveryTemplate.parse(Array(body.utf8)) else { return nil }
        parsed.withLock { cache in
            if cache.count >= maximumTemplates { cache.removeAll() }
            cache[name] = (updatedAt, template)
        }
        return template
    }

    /// Adds or replaces the network's template in `file` (checked first); rules that name it use the new one from their
    /// next delivery.
    @discardableResult
    public func set(file: [UInt8]) async throws -> DeliveryTemplate {
        let template = try DeliveryTemplate.parse(file)
        guard !Self.shipped.contains(where: { $0.name == template.name }) else { throw Refusal.shipped(template.name) }
        let body = JSONValue.object(template.json).prettyPrinted
        let now = Timestamp.format(Date())
        try await engine.write { db in
            let others = try db.value("SELECT count(*) FROM forward_templates WHERE name <> ?", [template.name], as: Int.self) ?? 0
            guard others < Self.maximumTemplates else { throw Refusal.tooMany(maximum: Self.maximumTemplates) }
            try db.execute("""
                INSERT INTO forward_templates (name, body, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
                """, [template.name, body, now])
        }
        return template
    }

    /// Removes the network's template `name`; false when there is none. Refused while a rule names it.
    public func remove(_ name: String) async throws -> Bool {
        guard !Self.shipped.contains(where: { $0.name == name }) else { throw Refusal.shipped(name) }
        return try await engine.write { db in
            let rules = try db.rows("SELECT name FROM forward_rules WHERE template = ? ORDER BY name", [name]).map { try $0.get("name", as: String.self) }
            guard rules.isEmpty else { throw Refusal.inUse(template: name, rules: rules) }
            return try db.execute("DELETE FROM forward_templates WHERE name = ?", [name]) > 0
        }
    }
}
