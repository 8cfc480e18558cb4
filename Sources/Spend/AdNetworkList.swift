import Foundation
import JWS
import Postback

/// A list of ad network ids and the companies they belong to, in the JSON layout ad networks and SDK vendors publish
/// for Info.plist's `SKAdNetworkItems`: an object with `skadnetwork_ids` (or an array of such objects), each entry an
/// `skadnetwork_id` and the `entity_name` of the company it belongs to (docs/cli.md#names).
public struct AdNetworkList: Sendable, Equatable {
    /// One ad network id and its company's name.
    public struct Entry: Sendable, Equatable {
        public let adNetworkID: String
        public let name: String

        /// An entry.
        public init(adNetworkID: String, name: String) {
            self.adNetworkID = adNetworkID
            self.name = name
        }
    }

    /// An entry of the file that was left out, by its position (1 for the first entry in the file), and why.
    public struct Skipped: Sendable, Equatable {
        public let entry: Int
        public let reason: String
    }

    /// Why a file is no such list.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The entries to name, each id once, in the file's order.
    public var entries: [Entry] = []
    /// The entries left out: ids of another shape, missing or refused names, an id the file names twice differently.
    public var skipped: [Skipped] = []

    /// The largest file read (published lists are tens of kilobytes).
    public static let maximumBytes = 4 << 20
    /// The most entries a file may hold.
    public static let maximumEntries = 20_000

    /// Reads a published list. Ids are trimmed and lowercased, as Apple writes them (lists copied from Info.plist files
    /// sometimes carry capitals or spaces); names are trimmed. An entry naming an id already named the same way is
    /// dropped; one naming it differently is skipped, the first name kept.
    public static func parse(_ bytes: [UInt8]) throws(Problem) -> AdNetworkList {
        guard bytes.count <= maximumBytes else { throw Problem(description: "the file is over \(maximumBytes >> 20) MiB; a published list is far smaller") }
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes, limits: JSONLimits(maximumValues: maximumEntries * 8, maximumStringBytes: 4096))
        } catch { throw Problem(description: "not JSON: \(error.description)") }
        let lists: [JSONValue] = if case .array(let items) = document { items } else { [document] }
        var list = AdNetworkList(), position = 0, named: [String: String] = [:]
        var found = false
        for item in lists {
            guard case .array(let ids)? = item.object?["skadnetwork_ids"] else { continue }
            found = true
            for entry in ids {
                position += 1
                guard position <= maximumEntries else { throw Problem(description: "more than \(maximumEntries) entries") }
                func skip(_ reason: String) { list.skipped.append(Skipped(entry: position, reason: reason)) }
                guard let raw = entry.object?["skadnetwork_id"]?.string else { skip("no skadnetwork_id"); continue }
                let id = raw.trimmingCharacters(in: .whitespaces).lowercased()
                guard isAdNetworkID(id) else { skip("\(SpendFile.quoted(raw)) is not an ad network id"); continue }
                guard let text = entry.object?["entity_name"]?.string else { skip("\(id) has no entity_name"); continue }
                let name = text.trimmingCharacters(in: .whitespaces)
                guard (1...200).contains(name.unicodeScalars.count), !LabelText.hasRefused(name) else {
                    skip("\(id): the name must be 1 to 200 characters without \(LabelText.refusedKinds)")
                    continue
                }
                if let earlier = named[id] {
                    if earlier != name { skip("\(id) is named \(SpendFile.quoted(earlier)) earlier in the file") }
                    continue
                }
                named[id] = name
                list.entries.append(Entry(adNetworkID: id, name: name))
            }
        }
        guard found else { throw Problem(description: "no skadnetwork_ids list: expected {\"skadnetwork_ids\": [{\"skadnetwork_id\": ..., \"entity_name\": ...}]}") }
        return list
    }
}
