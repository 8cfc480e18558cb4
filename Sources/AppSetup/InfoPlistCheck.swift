import JWS

/// Checks an app's attribution keys in its `Info.plist`: misspelled or wrongly cased keys, malformed `SKAdNetworkItems`
/// entries, identifiers that are not lower case, duplicates, copy endpoints that do not point at the domain registered
/// for the app, AdAttributionKit configuration values outside Apple's ranges, and accepted ad networks left out.
public enum InfoPlistCheck {
    /// What the check compares the file with.
    public struct Expectations: Sendable, Equatable {
        /// The domain registered for the app's developer copies (`countersign apps set --copy-domain`).
        public var copyDomain: String?
        /// Ad networks whose identifiers the app should list (the app's accepted networks).
        public var adNetworks: [String]

        /// Expectations.
        public init(copyDomain: String? = nil, adNetworks: [String] = []) {
            self.copyDomain = copyDomain
            self.adNetworks = adNetworks
        }
    }

    static let endpoints = ["NSAdvertisingAttributionReportEndpoint": "SKAdNetwork", "AttributionCopyEndpoint": "AdAttributionKit"]
    static let booleans = ["EligibleForAdAttributionKitReengagementPostbackCopies", "EligibleForAdAttributionKitOverlappingConversions"]
    /// Keys of the root this check knows; others are compared with them to catch misspellings.
    static let known = ["SKAdNetworkItems", "AdNetworkIdentifiers", "AdAttributionKitConfigurations", "AdAttributionKit"] + endpoints.keys.sorted() + booleans
    /// Keys an `AdAttributionKit` dictionary may hold (some guides nest the AdAttributionKit keys in one).
    static let nested = ["AttributionCopyEndpoint", "EligibleForAdAttributionKitReengagementPostbackCopies", "EligibleForAdAttributionKitOverlappingConversions", "AdNetworkIdentifiers"]

    /// Every finding of `plist` (the Info.plist's root), paths prefixed with `prefix` (such as `expo.ios.infoPlist.`).
    public static func check(_ plist: PlistValue, prefix: String = "", expecting: Expectations = Expectations()) -> [SetupFinding] {
        var findings: [SetupFinding] = []
        guard case .dictionary(let root) = plist else {
            return [SetupFinding(.error, prefix.isEmpty ? "(root)" : String(prefix.dropLast()), "must be a dictionary of keys, not a \(plist.typeName)")]
        }
        for (key, _) in root where !known.contains(key) {
            if let meant = misspelling(of: key, among: known) { findings.append(SetupFinding(.error, prefix + key, meant)) }
        }
        var identifiers = IdentifierList()
        if let items = plist["SKAdNetworkItems"] { checkItems(items, path: prefix + "SKAdNetworkItems", into: &findings, identifiers: &identifiers) }
        let nestedDictionary = plist["AdAttributionKit"]
        if let nestedDictionary {
            if case .dictionary(let members) = nestedDictionary {
                for (key, _) in members where !nested.contains(key) {
                    findings.append(SetupFinding(.warning, prefix + "AdAttributionKit." + key,
                                                 misspelling(of: key, among: nested) ?? "is not an AdAttributionKit key Countersign knows; Apple ignores it"))
                }
            } else {
                findings.append(SetupFinding(.error, prefix + "AdAttributionKit", "must be a dictionary, not a \(nestedDictionary.typeName)"))
            }
        }
        for (_, value, path) in lookUp("AdNetworkIdentifiers", plist, nestedDictionary, prefix) {
            guard case .array(let list) = value else {
                findings.append(SetupFinding(.error, path, "must be an array of ad network identifiers, not a \(value.typeName)"))
                continue
            }
            for (index, entry) in list.enumerated() {
                guard case .string(let identifier) = entry else {
                    findings.append(SetupFinding(.error, "\(path)[\(index)]", "must be an identifier string such as example123.adattributionkit, not a \(entry.typeName)"))
                    continue
                }
                checkIdentifier(identifier, path: "\(path)[\(index)]", into: &findings, identifiers: &identifiers)
            }
        }
        for key in endpoints.keys.sorted() {
            let found = lookUp(key, plist, nestedDictionary, prefix)
            if found.count > 1 { findings.append(SetupFinding(.warning, found[1].path, "is set twice (also at \(found[0].path)); keep one")) }
            guard let (_, value, path) = found.first else {
                findings.append(SetupFinding(.warning, prefix + key, "is missing: no developer copies of \(endpoints[key] ?? "") postbacks will arrive; set it to https://your-copy-domain (docs/setup.md)"))
                continue
            }
            checkEndpoint(value, path: path, protocolName: endpoints[key] ?? "", expecting: expecting, into: &findings)
        }
        for key in booleans {
            for (_, value, path) in lookUp(key, plist, nestedDictionary, prefix) {
                if case .bool = value { continue }
                findings.append(SetupFinding(.error, path, "must be a Boolean (<true/> in the plist, true in JSON), not a \(value.typeName)"))
            }
        }
        if let configurations = plist["AdAttributionKitConfigurations"] {
            AttributionConfigurationCheck.check(configurations, path: prefix + "AdAttributionKitConfigurations", into: &findings)
        }
        for network in expecting.adNetworks.sorted() where !identifiers.all.contains(network.lowercased()) {
            findings.append(SetupFinding(.warning, prefix + "SKAdNetworkItems", "does not list \(network), an ad network this app accepts: its ads cannot be attributed in this app"))
        }
        return findings
    }

    /// Identifiers seen so far: each list's (`SKAdNetworkItems`, `AdNetworkIdentifiers`) with the path of its first use,
    /// and all of them.
    struct IdentifierList {
        var first: [String: String] = [:]
        var all: Set<String> = []
    }

    /// `key` at the root and inside the nested `AdAttributionKit` dictionary, with their paths.
    private static func lookUp(_ key: String, _ root: PlistValue, _ nested: PlistValue?, _ prefix: String) -> [(String, PlistValue, path: String)] {
        var found: [(String, PlistValue, path: String)] = []
        if let value = root[key] { found.append((key, value, prefix + key)) }
        if let value = nested?[key] { found.append((key, value, prefix + "AdAttributionKit." + key)) }
        return found
    }

    private static func checkItems(_ items: PlistValue, path: String, into findings: inout [SetupFinding], identifiers: inout IdentifierList) {
        guard case .array(let entries) = items else {
            findings.append(SetupFinding(.error, path, "must be an array of dictionaries, each with SKAdNetworkIdentifier, not a \(items.typeName)"))
            return
        }
        for (index, entry) in entries.enumerated() {
            let here = "\(path)[\(index)]"
            guard case .dictionary(let members) = entry else {
                let hint = entry.typeName == "string" ? "; put the identifier under the key SKAdNetworkIdentifier" : ""
                findings.append(SetupFinding(.error, here, "must be a dictionary with SKAdNetworkIdentifier, not a \(entry.typeName)\(hint)"))
                continue
            }
            guard let value = entry["SKAdNetworkIdentifier"] else {
                if let (key, _) = members.first(where: { misspelling(of: $0.key, among: ["SKAdNetworkIdentifier"]) != nil }) {
                    findings.append(SetupFinding(.error, "\(here).\(key)", misspelling(of: key, among: ["SKAdNetworkIdentifier"]) ?? ""))
                } else if let (key, _) = members.first(where: { looksLikeIdentifier($0.key) }) {
                    findings.append(SetupFinding(.error, "\(here).\(key)", "uses the identifier as the key; write the key SKAdNetworkIdentifier with the string \(key.lowercased())"))
                } else {
                    findings.append(SetupFinding(.error, here, "has no SKAdNetworkIdentifier"))
                }
                continue
            }
            for (key, _) in members where key != "SKAdNetworkIdentifier" {
                findings.append(SetupFinding(.warning, "\(here).\(key)", "is not a key of an SKAdNetworkItems entry; Apple reads only SKAdNetworkIdentifier"))
            }
            guard case .string(let identifier) = value else {
                findings.append(SetupFinding(.error, "\(here).SKAdNetworkIdentifier", "must be a string such as cstr6suwn9.skadnetwork, not a \(value.typeName)"))
                continue
            }
            checkIdentifier(identifier, path: "\(here).SKAdNetworkIdentifier", into: &findings, identifiers: &identifiers)
        }
    }

    private static func checkIdentifier(_ identifier: String, path: String, into findings: inout [SetupFinding], identifiers: inout IdentifierList) {
        let lower = identifier.lowercased()
        if identifier.contains(where: \.isWhitespace) {
            findings.append(SetupFinding(.error, path, "\"\(identifier)\" holds spaces; Apple matches identifiers exactly"))
        } else if !looksLikeIdentifier(lower) {
            findings.append(SetupFinding(.error, path, "\"\(identifier)\" is not an ad network identifier such as cstr6suwn9.skadnetwork or example123.adattributionkit"))
        } else if lower != identifier {
            findings.append(SetupFinding(.error, path, "\"\(identifier)\" must be lower case or Apple does not recognise it; write \(lower)"))
        }
        let list = String(path.prefix { $0 != "[" }) + "|" + lower
        if let first = identifiers.first[list] {
            findings.append(SetupFinding(.warning, path, "repeats \(lower) (first at \(first)); list each network once"))
        } else {
            identifiers.first[list] = path
        }
        identifiers.all.insert(lower)
    }

    /// Whether `text` has the shape of an ad network identifier: letters and digits, then `.skadnetwork` or `.adattributionkit`.
    static func looksLikeIdentifier(_ text: String) -> Bool {
        let lower = text.lowercased()
        for suffix in [".skadnetwork", ".adattributionkit"] where lower.hasSuffix(suffix) {
            let name = lower.dropLast(suffix.count)
            return !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
        return false
    }

    private static func checkEndpoint(_ value: PlistValue, path: String, protocolName: String, expecting: Expectations, into findings: inout [SetupFinding]) {
        guard case .string(let text) = value else {
            findings.append(SetupFinding(.error, path, "must be a string such as https://example.com, not a \(value.typeName)"))
            return
        }
        guard text.lowercased().hasPrefix("https://") else {
            findings.append(SetupFinding(.error, path, "\"\(text)\" must start with https:// (Apple sends copies over HTTPS only)"))
            return
        }
        let rest = text.dropFirst("https://".count)
        let host = String(rest.prefix { $0 != "/" && $0 != ":" && $0 != "?" }).lowercased()
        let tail = rest.dropFirst(host.count)
        if host.isEmpty || !host.contains(".") {
            findings.append(SetupFinding(.error, path, "\"\(text)\" names no domain; write https://example.com"))
            return
        }
        if !tail.isEmpty, tail != "/" {
            findings.append(SetupFinding(.warning, path, "\"\(text)\": Apple keeps only the domain and drops \"\(tail)\"; write https://\(host)"))
        }
        guard let domain = expecting.copyDomain?.lowercased() else { return }
        if host == domain { return }
        if host.hasSuffix("." + domain) {
            findings.append(SetupFinding(.warning, path, "\(host): Apple keeps only the registrable domain, so \(protocolName) copies go to \(domain); write https://\(domain)"))
        } else {
            findings.append(SetupFinding(.error, path, "points at \(host), but this app's copies are registered for \(domain): \(protocolName) copies will not reach Countersign (fix the key, or countersign apps set --copy-domain)"))
        }
    }

    /// A message naming the key `key` was probably meant to be, when it differs from one of `keys` only in case or
    /// by at most two letters; nil otherwise.
    static func misspelling(of key: String, among keys: [String]) -> String? {
        if let meant = keys.first(where: { $0.lowercased() == key.lowercased() && $0 != key }) {
            return "wrong case: Apple reads the key \(meant) exactly"
        }
        guard key.count >= 8 else { return nil }
        if let meant = EditDistance.nearest(to: key, in: keys) {
            return "looks like a misspelling of \(meant); Apple ignores this key"
        }
        return nil
    }
}
