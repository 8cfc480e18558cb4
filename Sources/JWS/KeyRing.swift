import Foundation

/// Whether a key signs real traffic or test traffic.
public enum KeyEnvironment: String, Sendable, Codable, CaseIterable {
    /// Real postbacks: countable.
    case production
    /// Development postbacks: verified, flagged, never counted as production.
    case development
}

/// Which postback family a key verifies.
public enum KeyUsage: String, Sendable, Codable, CaseIterable, Comparable {
    /// AdAttributionKit JWS postbacks, key chosen by `kid`.
    case aak
    /// SKAdNetwork postbacks, key chosen by version and curve.
    case skan

    public static func < (lhs: KeyUsage, rhs: KeyUsage) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One pinned key with what it may be trusted for.
public struct KeyEntry: Sendable {
    /// The key id: AAK's JWS `kid`, or a label for SKAdNetwork keys (`skan-p256`).
    public let keyID: String
    /// The public key.
    public let key: ECPublicKey
    /// Production or development.
    public let environment: KeyEnvironment
    /// The postback families this key verifies.
    public let usages: Set<KeyUsage>
    /// Where the key came from (a file path, or `--key`).
    public let origin: String

    /// Creates an entry.
    public init(keyID: String, key: ECPublicKey, environment: KeyEnvironment, usages: Set<KeyUsage>, origin: String) {
        self.keyID = keyID
        self.key = key
        self.environment = environment
        self.usages = usages
        self.origin = origin
    }

    /// Reads a key file: optional `name: value` lines (`kid`, `environment`, `usage`) before the PEM block.
    ///
    /// Without a `kid` line the file name without `.pem` is the key id; without `environment` the key is
    /// production; without `usage` it verifies both families.
    public static func parse(fileText: String, origin: String, defaultKeyID: String) throws(KeyError) -> KeyEntry {
        var keyID = defaultKeyID
        var environment = KeyEnvironment.production
        var usages = Set(KeyUsage.allCases)
        for line in fileText.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("-----BEGIN") { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "kid": keyID = value
            case "environment":
                guard let parsed = KeyEnvironment(rawValue: value) else { throw KeyError("\(origin): environment must be production or development") }
                environment = parsed
            case "usage":
                var parsed = Set<KeyUsage>()
                for item in value.split(separator: ",") {
                    guard let usage = KeyUsage(rawValue: item.trimmingCharacters(in: .whitespaces)) else {
                        throw KeyError("\(origin): usage must list aak and/or skan")
                    }
                    parsed.insert(usage)
                }
                usages = parsed
            default: continue
            }
        }
        let key: ECPublicKey
        do { key = try ECPublicKey(pem: fileText) } catch { throw KeyError("\(origin): \(error.message)") }
        return KeyEntry(keyID: keyID, key: key, environment: environment, usages: usages, origin: origin)
    }
}

/// The pinned keys, by exact key id. An unknown id has no fallback.
public struct KeyRing: Sendable {
    /// All entries, in load order.
    public let entries: [KeyEntry]
    private let byKeyID: [String: KeyEntry]

    /// Creates a ring; two entries with one key id are an error.
    public init(_ entries: [KeyEntry]) throws(KeyError) {
        var byKeyID: [String: KeyEntry] = [:]
        for entry in entries {
            guard byKeyID[entry.keyID] == nil else { throw KeyError("duplicate key id \(entry.keyID)") }
            byKeyID[entry.keyID] = entry
        }
        self.entries = entries
        self.byKeyID = byKeyID
    }

    /// Builds every key's verification tables now (``ECPublicKey/prepare()``), so no request pays for them.
    public func prepare() {
        for entry in entries { entry.key.prepare() }
    }

    /// The entry whose id is exactly `keyID`, byte for byte, if it may verify `usage`.
    ///
    /// The dictionary finds ids by Unicode equivalence (`K` and KELVIN SIGN hash alike), so the bytes are compared
    /// again: the threat model promises an exact match.
    public func entry(keyID: String, usage: KeyUsage) -> KeyEntry? {
        guard let entry = byKeyID[keyID], entry.keyID.utf8.elementsEqual(keyID.utf8), entry.usages.contains(usage) else { return nil }
        return entry
    }

    /// Entries that verify `usage` on `curve`, in load order.
    public func entries(usage: KeyUsage, curve: Curve) -> [KeyEntry] {
        entries.filter { $0.usages.contains(usage) && $0.key.curve == curve }
    }

    /// A ring with `extra` added after these entries.
    public func adding(_ extra: [KeyEntry]) throws(KeyError) -> KeyRing {
        try KeyRing(entries + extra)
    }

    /// Loads every `*.pem` file in `directory`, sorted by name.
    public static func load(directory: String) throws(KeyError) -> KeyRing {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".pem") }.sorted()
        } catch {
            throw KeyError("cannot read key directory \(directory)")
        }
        var entries: [KeyEntry] = []
        for name in names {
            let path = directory + "/" + name
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw KeyError("cannot read \(path)") }
            entries.append(try KeyEntry.parse(fileText: text, origin: path, defaultKeyID: String(name.dropLast(4))))
        }
        return try KeyRing(entries)
    }

    /// Parses a `KID=PEM_FILE` argument into a production entry.
    public static func entry(argument: String) throws(KeyError) -> KeyEntry {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
            throw KeyError("--key takes KID=PEM_FILE, got \(argument)")
        }
        let keyID = String(argument[..<equals])
        let path = String(argument[argument.index(after: equals)...])
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw KeyError("cannot read key file \(path)") }
        let parsed = try KeyEntry.parse(fileText: text, origin: path, defaultKeyID: keyID)
        return KeyEntry(keyID: keyID, key: parsed.key, environment: .production, usages: parsed.usages, origin: "--key \(path)")
    }
}
