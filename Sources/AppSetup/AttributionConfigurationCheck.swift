/// Checks `AdAttributionKitConfigurations` against Apple's documented ranges: `AttributionWindows` (`global` or an ad
/// network id, each with `install` `click` 1-30 and `view` 1-7 days, and per network `ignoreInteractionType` `click`
/// or `view`) and `AttributionCooldown` (`install-cooldown-hours` and `re-engagement-cooldown-hours`, 0-720).
enum AttributionConfigurationCheck {
    static func check(_ value: PlistValue, path: String, into findings: inout [SetupFinding]) {
        guard case .dictionary(let configurations) = value else {
            findings.append(SetupFinding(.error, path, "must be a dictionary, not a \(value.typeName)"))
            return
        }
        for (key, member) in configurations {
            let here = path + "." + key
            switch key {
            case "AttributionWindows": windows(member, path: here, into: &findings)
            case "AttributionCooldown":
                for (_, hours, at) in members(member, path: here, allowed: ["install-cooldown-hours", "re-engagement-cooldown-hours"], into: &findings) {
                    number(hours, path: at, range: 0...720, unit: "hours", into: &findings)
                }
            default:
                findings.append(SetupFinding(.error, here, InfoPlistCheck.misspelling(of: key, among: ["AttributionWindows", "AttributionCooldown"])
                    ?? "is not an AdAttributionKit configuration; Apple documents AttributionWindows and AttributionCooldown"))
            }
        }
    }

    private static func windows(_ value: PlistValue, path: String, into findings: inout [SetupFinding]) {
        guard case .dictionary(let entries) = value else {
            findings.append(SetupFinding(.error, path, "must be a dictionary keyed by global or ad network ids, not a \(value.typeName)"))
            return
        }
        for (owner, entry) in entries {
            let here = path + "." + owner
            let global = owner == "global"
            if !global {
                if !InfoPlistCheck.looksLikeIdentifier(owner) {
                    findings.append(SetupFinding(.error, here, "must be global or an ad network id such as example123.adattributionkit"))
                } else if owner != owner.lowercased() {
                    findings.append(SetupFinding(.error, here, "must be lower case or Apple does not recognise it; write \(owner.lowercased())"))
                }
            }
            if global, entry["ignoreInteractionType"] != nil || entry["install"]?["ignoreInteractionType"] != nil {
                findings.append(SetupFinding(.error, here, "ignoreInteractionType applies to one ad network only, not to global"))
            }
            // Some write ignoreInteractionType inside install: Apple's page leaves it open, so both places are read.
            for (name, member, at) in members(entry, path: here, allowed: ["install", "ignoreInteractionType"], into: &findings) {
                guard name == "install" else {
                    if !global { interaction(member, path: at, into: &findings) }
                    continue
                }
                for (kind, days, inner) in members(member, path: at, allowed: ["click", "view", "ignoreInteractionType"], into: &findings) {
                    switch kind {
                    case "click": number(days, path: inner, range: 1...30, unit: "days", into: &findings)
                    case "view": number(days, path: inner, range: 1...7, unit: "days", into: &findings)
                    default: if !global { interaction(days, path: inner, into: &findings) }
                    }
                }
            }
        }
    }

    private static func interaction(_ value: PlistValue, path: String, into findings: inout [SetupFinding]) {
        guard case .string(let text) = value, ["click", "view"].contains(text) else {
            findings.append(SetupFinding(.error, path, "must be the string click or view"))
            return
        }
    }

    /// The members of the dictionary `value` whose keys are `allowed`, with their paths; a finding for any other key
    /// and for a value that is no dictionary.
    private static func members(_ value: PlistValue, path: String, allowed: [String], into findings: inout [SetupFinding]) -> [(String, PlistValue, String)] {
        guard case .dictionary(let members) = value else {
            findings.append(SetupFinding(.error, path, "must be a dictionary, not a \(value.typeName)"))
            return []
        }
        var kept: [(String, PlistValue, String)] = []
        for (key, member) in members {
            guard allowed.contains(key) else {
                findings.append(SetupFinding(.error, path + "." + key, InfoPlistCheck.misspelling(of: key, among: allowed)
                    ?? "is not a key here; Apple documents \(allowed.joined(separator: ", "))"))
                continue
            }
            kept.append((key, member, path + "." + key))
        }
        return kept
    }

    private static func number(_ value: PlistValue, path: String, range: ClosedRange<Int64>, unit: String, into findings: inout [SetupFinding]) {
        guard case .integer(let number) = value else {
            findings.append(SetupFinding(.error, path, "must be a whole number of \(unit) (\(range.lowerBound)-\(range.upperBound)), not a \(value.typeName)"))
            return
        }
        if !range.contains(number) {
            findings.append(SetupFinding(.error, path, "\(number) is outside Apple's range of \(range.lowerBound)-\(range.upperBound) \(unit)"))
        }
    }
}
