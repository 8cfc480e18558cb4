import Foundation
import JWS
import Postback
import Spend

/// Reads a schema document (JSON, format in docs/schemas.md) and runs every static check.
public enum SchemaReader {
    /// The `format` value this reader understands.
    public static let format = "countersign.conversion-schema/1"

    /// Parses and checks `bytes`.
    public static func check(_ bytes: [UInt8]) -> SchemaCheck {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            return SchemaCheck(schema: nil, diagnostics: [SchemaDiagnostic(severity: .error, path: "$", message: "not JSON: \(error.located(in: bytes))")])
        }
        var reader = Reader()
        let schema = reader.document(value)
        let ordered = reader.diagnostics.filter { $0.severity == .error } + reader.diagnostics.filter { $0.severity == .warning }
        return SchemaCheck(schema: ordered.contains { $0.severity == .error } ? nil : schema, diagnostics: ordered)
    }
}

private struct Reader {
    var diagnostics: [SchemaDiagnostic] = []
    var currencies: [(currency: String, path: String)] = []

    mutating func error(_ path: String, _ message: String) { diagnostics.append(SchemaDiagnostic(severity: .error, path: path, message: message)) }
    mutating func warning(_ path: String, _ message: String) { diagnostics.append(SchemaDiagnostic(severity: .warning, path: path, message: message)) }

    /// The object at `path`, reporting unknown and missing keys.
    mutating func object(_ value: JSONValue?, _ path: String, allowed: Set<String>, required: Set<String> = []) -> JSONObject? {
        guard let value else { return nil }
        guard let object = value.object else {
            error(path, "must be an object, not \(value.typeName)")
            return nil
        }
        for member in object.members where !allowed.contains(member.key) {
            error(path + "." + member.key, "unknown key \"\(member.key)\" (allowed: \(allowed.sorted().joined(separator: ", ")))")
        }
        for key in required.sorted() where object[key] == nil {
            error(path, "missing required key \"\(key)\"")
        }
        return object
    }

    mutating func string(_ value: JSONValue?, _ path: String) -> String? {
        guard let value else { return nil }
        guard let string = value.string else { error(path, "must be a string, not \(value.typeName)"); return nil }
        return string
    }

    /// A name reports and the dashboard show (the schema's, a level's, a value's, a bit field's, an event's): a string
    /// without control, format (bidi, zero-width) or noncharacter code points (``LabelText``).
    mutating func name(_ value: JSONValue?, _ path: String) -> String? {
        guard let name = string(value, path) else { return nil }
        if let problem = LabelText.problem(name) {
            error(path, "must be a name without \(LabelText.refusedKinds); it \(problem)")
        }
        return name
    }

    mutating func integer(_ value: JSONValue?, _ path: String) -> Int? {
        guard let value else { return nil }
        guard let integer = value.int64 else { error(path, "must be a whole number, not \(value.serialized)"); return nil }
        return Int(integer)
    }

    mutating func number(_ value: JSONValue?, _ path: String) -> Double? {
        guard let value else { return nil }
        guard case .number(let literal) = value, let number = Double(literal) else { error(path, "must be a number, not \(value.typeName)"); return nil }
        guard number.isFinite, abs(number) <= Reader.largestAmount else {
            error(path, "must be at most \(Reader.format(Reader.largestAmount)) in absolute value")
            return nil
        }
        return number
    }

    /// The largest revenue amount a schema may state; it keeps every sum of amounts exact to the cent.
    static let largestAmount = 1e12
    /// The largest event count; sums of counts over millions of postbacks stay far inside 64 bits.
    static let largestCount = 1_000_000

    mutating func array(_ value: JSONValue?, _ path: String) -> [JSONValue]? {
        guard let value else { return nil }
        guard case .array(let items) = value else { error(path, "must be an array, not \(value.typeName)"); return nil }
        return items
    }

    mutating func document(_ value: JSONValue) -> ConversionSchema? {
        guard let root = object(value, "$", allowed: ["format", "app", "name", "currency", "source-identifier", "source-mappings", "versions"],
                                required: ["format", "app", "versions"]) else { return nil }
        if let format = string(root["format"], "$.format"), format != SchemaReader.format {
            error("$.format", "must be \"\(SchemaReader.format)\", got \"\(format)\"")
        }
        let app = string(root["app"], "$.app") ?? ""
        let appID = AppID(app)
        if root["app"] != nil, appID == nil {
            error("$.app", "must be the app's numeric App Store id (advertised-item-identifier), got \"\(app)\"")
        }
        let currency = string(root["currency"], "$.currency")
        if let currency { checkCurrency(currency, "$.currency") }
        let hierarchy = sourceHierarchy(root["source-identifier"], "$.source-identifier")
        var versions: [SchemaVersion] = []
        if let items = array(root["versions"], "$.versions") {
            if items.isEmpty { error("$.versions", "must list at least one version") }
            for (index, item) in items.enumerated() {
                if let version = schemaVersion(item, "$.versions[\(index)]", currency: currency) { versions.append(version) }
            }
            for index in versions.indices.dropFirst() {
                if versions[index].version <= versions[index - 1].version {
                    error("$.versions[\(index)].version", "versions must increase: \(versions[index].version) follows \(versions[index - 1].version)")
                }
                if versions[index].effectiveFrom <= versions[index - 1].effectiveFrom {
                    error("$.versions[\(index)].effective-from", "effective-from must be later than the previous version's")
                }
            }
        }
        let documentCurrency = currency ?? currencies.first?.currency
        for entry in currencies where entry.currency != documentCurrency {
            error(entry.path, "mixed currencies: \(entry.currency) where the schema uses \(documentCurrency ?? "")")
        }
        // With an error recorded the schema is not used; the app stands in as 0.
        return ConversionSchema(app: appID ?? AppID(0), name: self.name(root["name"], "$.name"), currency: documentCurrency,
                                sourceHierarchy: hierarchy, versions: versions,
                                sourceMappings: sourceMappings(root["source-mappings"], "$.source-mappings"))
    }

    mutating func checkCurrency(_ currency: String, _ path: String) {
        if !CurrencyCode.isKnown(currency) {
            error(path, "must be an ISO 4217 currency code in upper case such as USD, got \"\(currency)\"")
        }
    }

    /// Names keyed by `digits` digits, such as `{"12": "Spring sale"}`.
    mutating func valueNames(_ value: JSONValue?, _ path: String, digits: Int) -> [String: String] {
        var names: [String: String] = [:]
        guard let namesObject = self.object(value, path, allowed: Set(value?.object?.members.map(\.key) ?? [])) else { return names }
        for member in namesObject.members {
            let digitsText = member.key
            if digitsText.utf8.count != digits || !digitsText.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                error("\(path).\(digitsText)", "must be \(digits) digit(s)")
            }
            names[digitsText] = self.name(member.value, "\(path).\(digitsText)")
        }
        return names
    }

    mutating func sourceHierarchy(_ value: JSONValue?, _ path: String) -> [SourceLevel] {
        guard let items = array(value, path) else { return [] }
        var levels: [SourceLevel] = []
        var used = Set<Int>()
        for (index, item) in items.enumerated() {
            let itemPath = "\(path)[\(index)]"
            guard let object = object(item, itemPath, allowed: ["level", "digits", "names", "network-names"], required: ["level", "digits"]) else { continue }
            let name = self.name(object["level"], itemPath + ".level") ?? ""
            guard let digits = array(object["digits"], itemPath + ".digits") else { continue }
            let positions = digits.enumerated().compactMap { integer($0.element, "\(itemPath).digits[\($0.offset)]") }
            guard positions.count == digits.count else { continue }
            guard let first = positions.first, let last = positions.last else {
                error(itemPath + ".digits", "must list digit positions such as [1, 2]")
                continue
            }
            guard positions.allSatisfy({ (1...4).contains($0) }) else {
                error(itemPath + ".digits", "positions must be 1 to 4 (a source identifier has at most 4 digits)")
                continue
            }
            guard positions.enumerated().allSatisfy({ $0.element == first + $0.offset }) else {
                error(itemPath + ".digits", "must be consecutive increasing digit positions such as [1, 2]")
                continue
            }
            let range = Set(first...last)
            if !used.isDisjoint(with: range) { error(itemPath + ".digits", "overlaps another level's digits") }
            used.formUnion(range)
            let names = valueNames(object["names"], itemPath + ".names", digits: last - first + 1)
            var networkNames: [String: [String: String]] = [:]
            let networks = object["network-names"]
            if let networksObject = self.object(networks, itemPath + ".network-names", allowed: Set(networks?.object?.members.map(\.key) ?? [])) {
                for member in networksObject.members {
                    let networkPath = "\(itemPath).network-names.\(member.key)"
                    if !isAdNetworkID(member.key) { error(networkPath, "must be a lowercase ad network id such as example123.skadnetwork") }
                    networkNames[member.key] = valueNames(member.value, networkPath, digits: last - first + 1)
                }
            }
            levels.append(SourceLevel(level: name, firstDigit: first, lastDigit: last, names: names, networkNames: networkNames))
        }
        return levels
    }

    /// The keys of one dated mapping, as the SKAN standard's mapping API names its columns. Key paths are immutable
    /// values, though not marked `Sendable`.
    nonisolated(unsafe) static let mappingKeys: [String: WritableKeyPath<SourceMapping, String?>] = [
        "end-date": \.validTo, "country": \.country, "publisher-id": \.publisher, "campaign-name": \.campaignName,
        "ad-group-id": \.adGroupID, "ad-group-name": \.adGroupName, "creative-id": \.creativeID, "creative-name": \.creativeName,
    ]

    /// `{"<ad network id>": [{"source-identifier": "7", "start-date": "2026-01-01", "campaign-id": "C1", ...}]}`: each
    /// network's dated mappings, checked as a mapping file is (docs/operations.md#dated-names).
    mutating func sourceMappings(_ value: JSONValue?, _ path: String) -> [String: [SourceMapping]] {
        var mappings: [String: [SourceMapping]] = [:]
        guard let networks = object(value, path, allowed: Set(value?.object?.members.map(\.key) ?? [])) else { return mappings }
        for member in networks.members {
            let networkPath = "\(path).\(member.key)"
            if !isAdNetworkID(member.key) { error(networkPath, "must be a lowercase ad network id such as example123.skadnetwork") }
            guard let items = array(member.value, networkPath) else { continue }
            guard items.count <= SourceMapping.maximumMappings else {
                error(networkPath, "an app and ad network hold at most \(SourceMapping.maximumMappings) mappings")
                continue
            }
            var list: [SourceMapping] = []
            for (index, item) in items.enumerated() {
                let itemPath = "\(networkPath)[\(index)]"
                let required: Set<String> = ["source-identifier", "start-date", "campaign-id"]
                guard let entry = object(item, itemPath, allowed: required.union(Self.mappingKeys.keys), required: required),
                      required.allSatisfy({ entry[$0] != nil }) else { continue }
                // Values are compared as a file's trimmed cells are.
                func value(_ key: String) -> String? { string(entry[key], "\(itemPath).\(key)")?.trimmingCharacters(in: .whitespaces) }
                var mapping = SourceMapping(sourceIdentifier: value("source-identifier") ?? "", validFrom: value("start-date") ?? "",
                                            campaignID: value("campaign-id") ?? "", line: index + 1)
                for (key, path) in Self.mappingKeys { mapping[keyPath: path] = value(key) }
                mapping.publisher = mapping.publisher?.lowercased()
                do {
                    try mapping.check()
                    list.append(mapping)
                } catch {
                    // The file's column names, said as this document's keys.
                    let keys = [("SKCampaignId", "source-identifier"), ("Start Date", "start-date"), ("End Date", "end-date"), ("Campaign ID", "campaign-id"),
                                ("Campaign Name", "campaign-name"), ("Ad Group ID", "ad-group-id"), ("Ad Group Name", "ad-group-name"),
                                ("Creative ID", "creative-id"), ("Creative Name", "creative-name"), ("Publisher ID", "publisher-id"), ("Country", "country")]
                    self.error(itemPath, keys.reduce(error.message) { $0.replacingOccurrences(of: $1.0, with: $1.1) })
                }
            }
            guard list.count == items.count else { continue }
            do {
                try SourceMapping.checkOverlaps(list) { "\(networkPath)[\($0.line - 1)]" }
            } catch {
                self.error(error.line > 0 ? "\(networkPath)[\(error.line - 1)]" : networkPath, error.message)
            }
            mappings[member.key] = list
        }
        return mappings
    }

    mutating func schemaVersion(_ value: JSONValue, _ path: String, currency: String?) -> SchemaVersion? {
        guard let object = object(value, path, allowed: ["version", "effective-from", "install", "re-engagement"],
                                  required: ["version", "effective-from"]) else { return nil }
        let version = integer(object["version"], path + ".version")
        var effectiveFrom: Date?
        if let text = string(object["effective-from"], path + ".effective-from") {
            effectiveFrom = Timestamp.parse(text)
            if effectiveFrom == nil { error(path + ".effective-from", "must be an ISO 8601 time such as 2026-11-01T00:00:00Z, got \"\(text)\"") }
        }
        var classes: [ConversionClass: ClassDefinition] = [:]
        for conversionClass in ConversionClass.allCases {
            let classPath = path + "." + conversionClass.rawValue
            guard let classObject = self.object(object[conversionClass.rawValue], classPath, allowed: ["windows"], required: ["windows"]) else { continue }
            guard let windowsObject = self.object(classObject["windows"], classPath + ".windows", allowed: ["0", "1", "2"]) else { continue }
            var windows: [Int: WindowDefinition] = [:]
            for member in windowsObject.members {
                guard let window = Int(member.key) else { continue }
                windows[window] = windowDefinition(member.value, "\(classPath).windows.\(member.key)", currency: currency)
            }
            // Apple sends fine values only in the first window (SKAdNetwork 4, AdAttributionKit); later postbacks carry a
            // coarse value or none, so a fine table there never applies.
            for window in [1, 2] where windows[window]?.fine != nil {
                warning("\(classPath).windows.\(window).fine", "Apple sends only coarse values in window \(window); this fine mapping is never used")
            }
            if windows[0] == nil, !windows.isEmpty {
                warning(classPath + ".windows", "window 0 is not defined, so later windows have nothing to inherit from")
            }
            classes[conversionClass] = ClassDefinition(windows: windows)
        }
        if classes.isEmpty { error(path, "defines neither install nor re-engagement") }
        guard let version, let effectiveFrom else { return nil }
        return SchemaVersion(version: version, effectiveFrom: effectiveFrom, classes: classes)
    }

    mutating func windowDefinition(_ value: JSONValue, _ path: String, currency: String?) -> WindowDefinition {
        guard let object = object(value, path, allowed: ["fine", "coarse"]) else { return WindowDefinition() }
        var definition = WindowDefinition()
        if let fineValue = object["fine"] { definition.fine = fineMapping(fineValue, path + ".fine", currency: currency) }
        if let coarseValue = object["coarse"] {
            let levels = Set(CoarseValue.Level.allCases.map(\.rawValue))
            if let coarseObject = self.object(coarseValue, path + ".coarse", allowed: levels) {
                var coarse: [CoarseValue.Level: Outcome] = [:]
                for member in coarseObject.members {
                    guard let level = CoarseValue.Level(rawValue: member.key) else { continue }
                    coarse[level] = outcome(member.value, "\(path).coarse.\(member.key)", currency: currency)
                }
                for level in CoarseValue.Level.allCases where coarse[level] == nil {
                    warning("\(path).coarse", "coarse value \(level.rawValue) is undefined")
                }
                checkRevenueRanges(coarse.map { ($0.key.rawValue, "\(path).coarse.\($0.key.rawValue)", $0.value) }, path + ".coarse")
                definition.coarse = coarse
            }
        }
        return definition
    }

    mutating func fineMapping(_ value: JSONValue, _ path: String, currency: String?) -> FineMapping? {
        guard let object = object(value, path, allowed: ["values", "bits"]) else { return nil }
        if object["values"] != nil, object["bits"] != nil {
            error(path, "use either values or bits, not both")
            return nil
        }
        if let bitsValue = object["bits"] {
            return bitFields(bitsValue, path + ".bits", currency: currency)
        }
        guard let items = array(object["values"], path + ".values") else {
            error(path, "missing required key \"values\" or \"bits\"")
            return nil
        }
        guard let table = valueTable(items, path + ".values", width: 6, currency: currency) else { return nil }
        return .table(table)
    }

    /// Entries `{"value": V}` or `{"range": [A, B]}` with an outcome, for values 0 to 2^width - 1.
    mutating func valueTable(_ items: [JSONValue], _ path: String, width: Int, currency: String?) -> [Int: Outcome]? {
        let maximum = (1 << width) - 1
        var table: [Int: Outcome] = [:]
        var definedAt: [Int: String] = [:]
        var ranged: [(String, String, Outcome)] = []
        for (index, item) in items.enumerated() {
            let itemPath = "\(path)[\(index)]"
            guard let entry = object(item, itemPath, allowed: ["value", "range", "events", "properties"]) else { continue }
            var values: [Int] = []
            if let single = entry["value"] {
                if let value = integer(single, itemPath + ".value") { values = [value] }
            } else if let rangeValue = entry["range"], let bounds = array(rangeValue, itemPath + ".range") {
                let numbers = bounds.enumerated().compactMap { integer($0.element, "\(itemPath).range[\($0.offset)]") }
                if numbers.count == 2, numbers[0] <= numbers[1] {
                    // Bounds are checked before the range is spelled out, so its size is at most 64.
                    guard (0...maximum).contains(numbers[0]), (0...maximum).contains(numbers[1]) else {
                        error(itemPath + ".range", "values must be within 0-\(maximum), got [\(numbers[0]), \(numbers[1])]")
                        continue
                    }
                    values = Array(numbers[0]...numbers[1])
                } else {
                    error(itemPath + ".range", "must be [first, last] with first <= last")
                }
            } else {
                error(itemPath, "needs \"value\" or \"range\"")
            }
            if let outside = values.first(where: { !(0...maximum).contains($0) }) {
                error(itemPath, "value \(outside) is out of range 0-\(maximum)")
                continue
            }
            let result = outcome(.object(entry), itemPath, currency: currency, extraAllowed: ["value", "range"])
            for value in values {
                if let earlier = definedAt[value] {
                    error(itemPath, "value \(value) is already defined at \(earlier)")
                } else {
                    definedAt[value] = itemPath
                    table[value] = result
                }
            }
            if let first = values.first { ranged.append((values.count == 1 ? "\(first)" : "\(first)-\(values.last!)", itemPath, result)) }
        }
        let undefined = (0...maximum).filter { table[$0] == nil }
        if !undefined.isEmpty { warning(path, "values \(Self.ranges(undefined)) are undefined") }
        checkRevenueRanges(ranged, path)
        return table
    }

    mutating func bitFields(_ value: JSONValue, _ path: String, currency: String?) -> FineMapping? {
        guard let items = array(value, path) else { return nil }
        var fields: [BitField] = []
        var usedBits = Set<Int>()
        for (index, item) in items.enumerated() {
            let itemPath = "\(path)[\(index)]"
            guard let object = object(item, itemPath, allowed: ["name", "bits", "values"], required: ["name", "bits", "values"]) else { continue }
            let name = self.name(object["name"], itemPath + ".name") ?? ""
            guard let bounds = array(object["bits"], itemPath + ".bits") else { continue }
            let numbers = bounds.enumerated().compactMap { integer($0.element, "\(itemPath).bits[\($0.offset)]") }
            guard numbers.count == 2, numbers[0] <= numbers[1] else {
                error(itemPath + ".bits", "must be [lowest, highest] with lowest <= highest")
                continue
            }
            guard numbers[0] >= 0, numbers[1] <= 5 else {
                error(itemPath + ".bits", "bits \(numbers[0])-\(numbers[1]) exceed the 6-bit conversion value (bits 0-5)")
                continue
            }
            let bits = Set(numbers[0]...numbers[1])
            if !usedBits.isDisjoint(with: bits) {
                error(itemPath + ".bits", "bits \(numbers[0])-\(numbers[1]) overlap another field's bits")
            }
            usedBits.formUnion(bits)
            guard let valueItems = array(object["values"], itemPath + ".values"),
                  let table = valueTable(valueItems, itemPath + ".values", width: numbers[1] - numbers[0] + 1, currency: currency)
            else { continue }
            fields.append(BitField(name: name, lowBit: numbers[0], highBit: numbers[1], values: table))
        }
        if fields.filter({ $0.values.values.contains { $0.events.contains { $0.revenue != nil } } }).count > 1 {
            warning(path, "more than one bit field carries revenue; their ranges are added together")
        }
        return .bitFields(fields)
    }

    mutating func outcome(_ value: JSONValue, _ path: String, currency: String?, extraAllowed: Set<String> = []) -> Outcome {
        guard let object = object(value, path, allowed: Set(["events", "properties"]).union(extraAllowed)) else {
            return Outcome(events: [], properties: [:])
        }
        var events: [BusinessEvent] = []
        if let items = array(object["events"], path + ".events") {
            for (index, item) in items.enumerated() {
                let eventPath = "\(path).events[\(index)]"
                guard let event = self.object(item, eventPath, allowed: ["name", "count", "revenue", "properties"], required: ["name"]) else { continue }
                var parsed = BusinessEvent(name: self.name(event["name"], eventPath + ".name") ?? "", count: nil, revenue: nil,
                                           properties: properties(event["properties"], eventPath + ".properties"))
                if let count = integer(event["count"], eventPath + ".count") {
                    if !(1...Reader.largestCount).contains(count) { error(eventPath + ".count", "must be 1 to \(Reader.largestCount)") }
                    parsed.count = count
                }
                if let revenueValue = event["revenue"],
                   let revenue = self.object(revenueValue, eventPath + ".revenue", allowed: ["min", "max", "currency"], required: ["min", "max"]) {
                    let minimum = number(revenue["min"], eventPath + ".revenue.min") ?? 0
                    let maximum = number(revenue["max"], eventPath + ".revenue.max") ?? 0
                    if minimum < 0 { error(eventPath + ".revenue.min", "must not be negative") }
                    if minimum > maximum { error(eventPath + ".revenue", "min \(minimum) is greater than max \(maximum)") }
                    let eventCurrency = string(revenue["currency"], eventPath + ".revenue.currency")
                    if let eventCurrency {
                        checkCurrency(eventCurrency, eventPath + ".revenue.currency")
                        currencies.append((eventCurrency, eventPath + ".revenue.currency"))
                    } else if currency == nil {
                        error(eventPath + ".revenue", "needs a currency, here or as the schema's \"currency\"")
                    }
                    parsed.revenue = RevenueRange(min: minimum, max: maximum, currency: eventCurrency ?? currency ?? "")
                }
                events.append(parsed)
            }
        }
        return Outcome(events: events, properties: properties(object["properties"], path + ".properties"))
    }

    mutating func properties(_ value: JSONValue?, _ path: String) -> [String: String] {
        guard let value else { return [:] }
        guard let object = value.object else { error(path, "must be an object of strings"); return [:] }
        var result: [String: String] = [:]
        for member in object.members {
            switch member.value {
            case .string(let text): result[member.key] = text
            case .number(let literal): result[member.key] = literal
            case .bool(let flag): result[member.key] = flag ? "true" : "false"
            default: error(path + "." + member.key, "must be a string, number or boolean")
            }
        }
        return result
    }

    /// Revenue ranges of distinct values must not overlap; a gap between them is a warning.
    mutating func checkRevenueRanges(_ entries: [(label: String, path: String, outcome: Outcome)], _ path: String) {
        var ranges: [(range: RevenueRange, label: String, path: String)] = []
        for entry in entries {
            let total = entry.outcome.events.compactMap(\.revenue)
            guard let first = total.first else { continue }
            let sum = total.dropFirst().reduce(first) { RevenueRange(min: $0.min + $1.min, max: $0.max + $1.max, currency: $0.currency) }
            ranges.append((sum, entry.label, entry.path))
        }
        ranges.sort { ($0.range.min, $0.range.max) < ($1.range.min, $1.range.max) }
        for index in ranges.indices.dropFirst() {
            let previous = ranges[index - 1]
            let current = ranges[index]
            if current.range.min < previous.range.max, !(current.range.min == previous.range.min && current.range.max == previous.range.max && current.range.min == current.range.max) {
                error(current.path, "revenue range \(Self.money(current.range)) of value \(current.label) overlaps \(Self.money(previous.range)) of value \(previous.label)")
            } else if current.range.min > previous.range.max {
                warning(current.path, "gap in revenue ranges between \(Self.format(previous.range.max)) (value \(previous.label)) and \(Self.format(current.range.min)) (value \(current.label))")
            }
        }
    }

    static func format(_ amount: Double) -> String {
        Int64(exactly: amount).map(String.init) ?? String(amount)
    }

    static func money(_ range: RevenueRange) -> String { "\(format(range.min))-\(format(range.max))" }

    static func ranges(_ values: [Int]) -> String {
        var parts: [String] = []
        var start = values[0]
        var previous = values[0]
        for value in values.dropFirst() + [Int.max] {
            if value == previous + 1 { previous = value; continue }
            parts.append(start == previous ? "\(start)" : "\(start)-\(previous)")
            start = value
            previous = value
        }
        return parts.joined(separator: ", ")
    }
}
