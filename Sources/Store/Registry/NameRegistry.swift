import Foundation
import Spend
import JWS
import Postback

/// The names people give to what postbacks carry as ids and digits: ad networks (the registry), and campaign, ad-group
/// and creative digits per app and ad network (each network chooses its own digits). Reports read them at query time,
/// so a rename shows at once, without decoding anything again.
public struct NameRegistry: Sendable {
    let engine: any DatabaseEngine

    /// A level of the source identifier that can be named, with the digits it takes.
    public enum Level: String, Sendable, CaseIterable {
        case campaign, adGroup = "ad_group", creative

        /// How many digits name a value at this level: campaign digits 1-2, ad group 3, creative 4.
        public var digitCount: Int { self == .campaign ? 2 : 1 }
    }

    /// Why a name was refused.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let field: String
        public let message: String
        public var description: String { "\(field): \(message)" }
    }

    /// An ad network's name in the registry.
    public struct AdNetworkName: Sendable, Equatable {
        public let adNetworkID: String
        public let name: String
        public let updatedAt: String
    }

    /// A source-identifier value's name for one app and ad network.
    public struct SourceName: Sendable, Equatable {
        public let app: AppID
        public let adNetworkID: String
        public let level: Level
        public let digits: String
        public let name: String
        public let updatedAt: String
    }

    /// Names reports use when nobody gave one: Apple Ads as an ad network (`com.apple.ads`, which sends SKAdNetwork
    /// postbacks since 2025 and AdAttributionKit ones from iOS 26.2).
    public static let builtInAdNetworks = ["com.apple.ads": "Apple Ads"]

    /// Apple Ads' SKAdNetwork `campaign-id`, which encodes where the ad ran.
    public static let appleAdsPlacements = ["10": "Search Results", "20": "Search Tab", "30": "Today Tab", "40": "Product Pages"]

    /// Checks an ad network id the way postbacks' `ad-network-id` is checked.
    static func checkAdNetwork(_ id: String) throws(Problem) {
        guard isAdNetworkID(id) else {
            throw Problem(field: "ad_network", message: "must be a lowercase ad network id such as example123.skadnetwork or com.apple.ads")
        }
    }

    /// A name: 1 to 200 characters (Unicode code points, as JSON Schema counts them), none of them a control, format
    /// (bidi, zero-width) or noncharacter code point or a line or paragraph separator (``LabelText``).
    static func checkName(_ name: String) throws(Problem) {
        guard (1...200).contains(name.unicodeScalars.count), !LabelText.hasRefused(name) else {
            throw Problem(field: "name", message: "must be 1 to 200 characters without \(LabelText.refusedKinds)")
        }
    }

    /// Every ad network name, by id.
    public func adNetworks() async throws -> [AdNetworkName] {
        try await engine.read { db in
            try db.rows("SELECT ad_network_id, name, updated_at FROM ad_networks ORDER BY ad_network_id", []).map {
                AdNetworkName(adNetworkID: try $0.get("ad_network_id"), name: try $0.get("name"), updatedAt: try $0.get("updated_at"))
            }
        }
    }

    /// Names ad network `id` (replacing its name).
    public func setAdNetwork(_ id: String, name: String) async throws {
        try Self.checkAdNetwork(id)
        try Self.checkName(name)
        let now = Timestamp.format(Date())
        _ = try await engine.write { db in
            try db.execute("INSERT INTO ad_networks (ad_network_id, name, updated_at) VALUES (?, ?, ?) "
                           + "ON CONFLICT (ad_network_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at", [id, name, now])
        }
    }

    /// What ``importAdNetworks(_:replace:)`` did: ids named for the first time, renamed, kept under the name someone
    /// gave (without `replace`), and already named as the list names them.
    public struct AdNetworkImport: Sendable, Equatable {
        public var added = 0, renamed = 0, kept = 0, unchanged = 0
    }

    /// Names the ad networks of a published list in one transaction. Ids that already have another name keep it unless
    /// `replace`, so names typed with `set-network` survive a later import of the list.
    public func importAdNetworks(_ entries: [AdNetworkList.Entry], replace: Bool) async throws -> AdNetworkImport {
        for entry in entries {
            try Self.checkAdNetwork(entry.adNetworkID)
            try Self.checkName(entry.name)
        }
        let now = Timestamp.format(Date())
        return try await engine.write { db in
            var given: [String: String] = [:]
            for row in try db.rows("SELECT ad_network_id, name FROM ad_networks", []) { given[try row.get("ad_network_id")] = try row.get("name") }
            var result = AdNetworkImport()
            for entry in entries {
                switch given[entry.adNetworkID] {
                case entry.name?: result.unchanged += 1; continue
                case nil: result.added += 1
                case _? where replace: result.renamed += 1
                case _?: result.kept += 1; continue
                }
                try db.execute("INSERT INTO ad_networks (ad_network_id, name, updated_at) VALUES (?, ?, ?) "
                               + "ON CONFLICT (ad_network_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at", [entry.adNetworkID, entry.name, now])
            }
            return result
        }
    }

    /// Removes ad network `id`'s name; false when it had none.
    public func removeAdNetwork(_ id: String) async throws -> Bool {
        try await engine.write { db in try db.execute("DELETE FROM ad_networks WHERE ad_network_id = ?", [id]) > 0 }
    }

    /// The source names of `app`, by ad network, level and digits.
    public func sourceNames(app: AppID) async throws -> [SourceName] {
        try await engine.read { db in
            try db.rows("SELECT app, ad_network_id, level, digits, name, updated_at FROM source_names WHERE app = ? ORDER BY ad_network_id, level, digits", [app]).map {
                SourceName(app: try $0.get("app"), adNetworkID: try $0.get("ad_network_id"), level: Level(rawValue: try $0.get("level")) ?? .campaign,
                           digits: try $0.get("digits"), name: try $0.get("name"), updatedAt: try $0.get("updated_at"))
            }
        }
    }

    /// Names `digits` at `level` for `app`'s ads on `adNetwork` (replacing the name).
    public func setSourceName(app: AppID, adNetwork: String, level: Level, digits: String, name: String) async throws {
        try Self.checkAdNetwork(adNetwork)
        try Self.checkDigits(digits, level: level)
        try Self.checkName(name)
        let now = Timestamp.format(Date())
        _ = try await engine.write { db in
            try db.execute("INSERT INTO source_names (app, ad_network_id, level, digits, name, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
                           + "ON CONFLICT (app, ad_network_id, level, digits) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at",
                           [app, adNetwork, level.rawValue, digits, name, now])
        }
    }

    /// Removes a source name; false when there was none.
    public func removeSourceName(app: AppID, adNetwork: String, level: Level, digits: String) async throws -> Bool {
        try await engine.write { db in
            try db.execute("DELETE FROM source_names WHERE app = ? AND ad_network_id = ? AND level = ? AND digits = ?",
                           [app, adNetwork, level.rawValue, digits]) > 0
        }
    }

    /// The dated mappings of `app`'s identifiers on `adNetwork` (every network's when nil), by identifier and first day.
    public func mappings(app: AppID, adNetwork: String?) async throws -> [(adNetwork: String, mapping: SourceMapping)] {
        try await engine.read { db in
            try db.rows("""
                SELECT ad_network_id, source_identifier, country, publisher, valid_from, valid_to, campaign_id, campaign_name, ad_group_id,
                       ad_group_name, creative_id, creative_name
                FROM source_mappings WHERE app = ?\(adNetwork == nil ? "" : " AND ad_network_id = ?")
                """, adNetwork.map { [app, $0] } ?? [app]).map { row in
                (try row.get("ad_network_id"), SourceMapping(
                    sourceIdentifier: try row.get("source_identifier"), country: try row.get("country"), publisher: try row.get("publisher"),
                    validFrom: try row.get("valid_from"), validTo: try row.get("valid_to"), campaignID: try row.get("campaign_id"),
                    campaignName: try row.get("campaign_name"), adGroupID: try row.get("ad_group_id"), adGroupName: try row.get("ad_group_name"),
                    creativeID: try row.get("creative_id"), creativeName: try row.get("creative_name")))
            }.sorted { ($0.0, $0.1.sourceIdentifier, $0.1.validFrom, $0.1.country ?? "", $0.1.publisher ?? "")
                < ($1.0, $1.1.sourceIdentifier, $1.1.validFrom, $1.1.country ?? "", $1.1.publisher ?? "") }
        }
    }

    /// Replaces every dated mapping of `app`'s identifiers on `adNetwork` with `mappings` (checked, and refused whole when
    /// two overlap), in one transaction, as the SKAN standard's mapping API gives the whole list; returns how many.
    @discardableResult
    public func setMappings(app: AppID, adNetwork: String, _ mappings: [SourceMapping]) async throws -> Int {
        try Self.checkAdNetwork(adNetwork)
        guard mappings.count <= SourceMapping.maximumMappings else {
            throw SourceMapping.Problem(line: 0, message: "an app and ad network hold at most \(SourceMapping.maximumMappings) mappings")
        }
        for mapping in mappings { try mapping.check() }
        try SourceMapping.checkOverlaps(mappings)
        return try await engine.write { session in
            try Self.replaceMappings(session, app: app, adNetwork: adNetwork, mappings)
            return mappings.count
        }
    }

    /// Replaces `app`'s mappings on `adNetwork` with `mappings` (already checked) inside `session`'s transaction.
    static func replaceMappings(_ session: any SQLSession, app: AppID, adNetwork: String, _ mappings: [SourceMapping]) throws {
        let now = Timestamp.format(Date())
        try session.execute("DELETE FROM source_mappings WHERE app = ? AND ad_network_id = ?", [app, adNetwork])
        for mapping in mappings {
            try session.execute("""
                INSERT INTO source_mappings (app, ad_network_id, source_identifier, country, publisher, valid_from, valid_to, campaign_id,
                    campaign_name, ad_group_id, ad_group_name, creative_id, creative_name, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [app, adNetwork, mapping.sourceIdentifier, mapping.country, mapping.publisher, mapping.validFrom, mapping.validTo,
                      mapping.campaignID, mapping.campaignName, mapping.adGroupID, mapping.adGroupName, mapping.creativeID, mapping.creativeName, now])
        }
    }

    /// `digits` must be exactly the level's number of ASCII digits.
    static func checkDigits(_ digits: String, level: Level) throws(Problem) {
        guard digits.utf8.count == level.digitCount, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw Problem(field: "digits", message: "a \(level.rawValue) is named by \(level.digitCount) digit\(level.digitCount == 1 ? "" : "s"), such as \(level == .campaign ? "12" : "3")")
        }
    }
}
