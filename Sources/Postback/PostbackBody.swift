import JWS

/// What of a postback body is stored. Apple adds members over time, so members it does not document are kept, but
/// only up to ``unknownMembersKept`` bytes in all: past that a body is stored without its unknown members, so a body
/// padded with junk stores about as small as Apple's own (issue 25: one connection stored 90 MB/s of padding).
public enum PostbackBody {
    /// Bytes of members Apple does not document that a body keeps (their names and values as written).
    public static let unknownMembersKept = 1024
    /// Bodies this long or shorter are never examined: Apple's postbacks are under 2 KB with every documented member.
    static let examinedFrom = 2048

    /// The most bytes a body nobody can verify yet may take once trimmed: Apple's postbacks take under 2 KB, so a larger
    /// one is refused (`too_large`) rather than kept for `reverify`.
    public static let unverifiableKept = 4096

    /// `body`, or, when it is longer than Apple's postbacks are, the same JSON object written again without white space
    /// and, when its undocumented members take more than ``unknownMembersKept`` bytes, without them (documented members
    /// keep their order and values, so the signature still verifies). Anything that is not a JSON object is returned
    /// as it is, for the verifier to judge.
    public static func trimmingUnknownMembers(_ body: [UInt8]) -> [UInt8] {
        guard body.count > examinedFrom, let object = (try? JSONParser.parse(body, keys: PostbackKeys.table, limits: .publicBody))?.object else {
            return body
        }
        let unknown = object.members.filter { !PostbackKeys.documented.contains($0.key) }
        let unknownBytes = unknown.reduce(0) { $0 + JSONValue.string($1.key).serialized.utf8.count + 1 + $1.value.serialized.utf8.count }
        let kept = unknownBytes > unknownMembersKept ? JSONObject(object.members.filter { PostbackKeys.documented.contains($0.key) }) : object
        let compact = Array(JSONValue.object(kept).serialized.utf8)
        return compact.count < body.count ? compact : body
    }
}

/// Who a body says it is, read without believing it: the postback identifier (AdAttributionKit) or transaction id
/// (SKAdNetwork), the ad network, app and source it names. Kept with a rejected body's receipt, so reconciliation can
/// say that a network's claim met only a refused copy, and a forgery can be counted against the network it names.
public struct ClaimedIdentity: Sendable, Equatable {
    /// `postback-identifier` or `transaction-id`, as sent (at most 128 printable characters).
    public let identifier: String
    /// The ad network id it names, when it has that shape.
    public let adNetwork: String?
    /// The App Store id it names.
    public let app: AppID?
    /// Its source identifier (or SKAdNetwork's campaign-id), digits only.
    public let source: String?

    /// What `body` claims, or nil when it names no identifier one can read.
    public static func read(_ body: [UInt8]) -> ClaimedIdentity? {
        guard let outer = (try? JSONParser.parse(body, keys: PostbackKeys.table, limits: .publicBody))?.object else { return nil }
        var fields = outer
        if let jws = outer["jws-string"]?.string {
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let payload = Base64.decode(Array(parts[1].utf8), alphabet: .url),
                  let object = (try? JSONParser.parse(payload, keys: PostbackKeys.table, limits: .publicBody))?.object else { return nil }
            fields = object
        }
        guard let identifier = (fields["postback-identifier"] ?? fields["transaction-id"])?.string, (1...128).contains(identifier.utf8.count),
              identifier.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        let network = (fields["ad-network-identifier"] ?? fields["ad-network-id"])?.string.flatMap { isAdNetworkID($0) ? $0 : nil }
        let app = (fields["advertised-item-identifier"] ?? fields["app-id"])?.int64.map { AppID($0) }
        let sourceValue = fields["source-identifier"] ?? fields["campaign-id"]
        let source = (sourceValue?.string ?? sourceValue?.int64.map(String.init)).flatMap { text in
            (1...4).contains(text.count) && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber) ? text : nil
        }
        return ClaimedIdentity(identifier: identifier, adNetwork: network, app: app, source: source)
    }
}
