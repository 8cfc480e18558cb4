import JWS

/// What of a postback body is stored. Apple adds members over time, so members it does not document are kept, but
/// only up to ``unknownMembersKept`` bytes in all: past that a body is stored without its unknown members, so a body
/// padded with junk stores about as small as Apple's own (issue 25: one connection stored 90 MB/s of padding).
public enum PostbackBody {
    /// Bytes of members Apple does not document that a body keeps (their names and values as written).
    public static let unknownMembersKept = 1024
    /// Bodies this long or shorter are never examined: Apple's postbacks are under 2 KB with every documented member.
    static let examinedFrom = 2048

    /// `body`, or, when its undocumented members take more than ``unknownMembersKept`` bytes, the same JSON object
    /// written again without them (documented members keep their order and values, so the signature still verifies).
    /// Anything that is not a JSON object is returned as it is, for the verifier to judge.
    public static func trimmingUnknownMembers(_ body: [UInt8]) -> [UInt8] {
        guard body.count > examinedFrom, let object = (try? JSONParser.parse(body, keys: PostbackKeys.table, limits: .publicBody))?.object else {
            return body
        }
        let unknown = object.members.filter { !PostbackKeys.documented.contains($0.key) }
        let unknownBytes = unknown.reduce(0) { $0 + JSONValue.string($1.key).serialized.utf8.count + 1 + $1.value.serialized.utf8.count }
        guard unknownBytes > unknownMembersKept else { return body }
        return Array(JSONValue.object(JSONObject(object.members.filter { PostbackKeys.documented.contains($0.key) })).serialized.utf8)
    }
}
