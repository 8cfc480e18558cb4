import Foundation
import JWS

/// Reads the file an app's attribution set-up lives in: an `Info.plist` (XML or binary), or Expo's `app.json` /
/// `app.config.json`, whose `expo.ios.infoPlist` (or `ios.infoPlist`) becomes the Info.plist at prebuild.
public enum SetupFile {
    /// What was read: the Info.plist's root and the path prefix its findings take.
    public struct Contents: Sendable, Equatable {
        /// The Info.plist's root; nil for an Expo file without one.
        public var root: PlistValue?
        /// `expo.ios.infoPlist.` for Expo files, empty for an Info.plist.
        public var prefix: String
        /// Findings about the file itself (an Expo file without `infoPlist`, a JSON null).
        public var findings: [SetupFinding]
    }

    /// Why a file cannot be checked at all.
    public struct Unreadable: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Reads `bytes`: JSON when they start with `{`, else a property list.
    public static func read(_ bytes: [UInt8]) -> Result<Contents, Unreadable> {
        let first = bytes.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        return first == UInt8(ascii: "{") ? expo(bytes) : plist(bytes)
    }

    /// The most values a file may hold once read, and the deepest nesting: an Info.plist holds a few hundred, and a
    /// binary plist can name one object many times, so what it expands to is bounded, not only its bytes.
    static let maximumValues = 100_000
    static let maximumDepth = 32
    /// The largest file read.
    public static let maximumBytes = 8 << 20

    private static func plist(_ bytes: [UInt8]) -> Result<Contents, Unreadable> {
        var format = PropertyListSerialization.PropertyListFormat.xml
        guard let value = try? PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &format), format != .openStep else {
            return .failure(Unreadable(message: "is not an XML or binary property list, nor an Expo app.json"))
        }
        var budget = maximumValues
        guard let root = plistValue(value, depth: 0, budget: &budget) else {
            return .failure(Unreadable(message: "holds more than \(maximumValues) values or nests deeper than \(maximumDepth): not an Info.plist"))
        }
        return .success(Contents(root: root, prefix: "", findings: []))
    }

    /// Foundation's property-list objects as values, nil past the bounds. Booleans are told from numbers by their
    /// Objective-C type `c` (Darwin's `__NSCFBoolean` and Linux's bridged `Bool` alike); plist integers are never `c`.
    static func plistValue(_ value: Any, depth: Int, budget: inout Int) -> PlistValue? {
        budget -= 1
        guard budget >= 0, depth <= maximumDepth else { return nil }
        switch value {
        case let text as String: return .string(text)
        case let number as NSNumber:
            let type = String(cString: number.objCType)
            if type == "c" || type == "B" { return .bool(number.boolValue) }
            return type == "d" || type == "f" ? .real(number.doubleValue) : .integer(number.int64Value)
        case let list as [Any]:
            var values: [PlistValue] = []
            for element in list {
                guard let converted = plistValue(element, depth: depth + 1, budget: &budget) else { return nil }
                values.append(converted)
            }
            return .array(values)
        case let dictionary as [String: Any]:
            var members: [(key: String, value: PlistValue)] = []
            for (key, element) in dictionary.sorted(by: { $0.key < $1.key }) {
                guard let converted = plistValue(element, depth: depth + 1, budget: &budget) else { return nil }
                members.append((key: key, value: converted))
            }
            return .dictionary(members)
        case is Date: return .date
        default: return .data
        }
    }

    private static func expo(_ bytes: [UInt8]) -> Result<Contents, Unreadable> {
        let document: JSONValue
        do { document = try JSONParser.parse(bytes, limits: JSONLimits(maximumValues: 1_000_000, maximumStringBytes: 1 << 20)) } catch {
            return .failure(Unreadable(message: "is not valid JSON: \(error.located(in: bytes))"))
        }
        guard let root = document.object else { return .failure(Unreadable(message: "is JSON but not an object, so not an Expo app.json")) }
        let (config, prefix) = root["expo"]?.object.map { ($0, "expo.") } ?? (root, "")
        guard let infoPlist = config["ios"]?.object?["infoPlist"] else {
            return .success(Contents(root: nil, prefix: prefix + "ios.infoPlist.", findings: [
                SetupFinding(.error, prefix + "ios.infoPlist", "is missing: Expo writes no attribution keys into Info.plist (docs/setup.md, Expo)"),
            ]))
        }
        var findings: [SetupFinding] = []
        let value = jsonValue(infoPlist, path: prefix + "ios.infoPlist", findings: &findings)
        return .success(Contents(root: value, prefix: prefix + "ios.infoPlist.", findings: findings))
    }

    private static func jsonValue(_ value: JSONValue, path: String, findings: inout [SetupFinding]) -> PlistValue {
        switch value {
        case .null:
            findings.append(SetupFinding(.error, path, "is null, which a property list cannot hold"))
            return .data
        case .bool(let flag): return .bool(flag)
        case .number(let literal): return value.int64.map(PlistValue.integer) ?? .real(Double(literal) ?? 0)
        case .string(let text): return .string(text)
        case .array(let list): return .array(list.enumerated().map { jsonValue($1, path: "\(path)[\($0)]", findings: &findings) })
        case .object(let object): return .dictionary(object.members.map { (key: $0.key, value: jsonValue($0.value, path: path + "." + $0.key, findings: &findings)) })
        }
    }
}
