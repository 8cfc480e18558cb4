import ConversionSchema
import CountersignEncoder
import Foundation
import Postback
import PostbackMint
import SchemaDesign
import Testing

/// The round trip: for the example schemas and random ones (tables and bit fields, every window, coarse values and
/// re-engagements), what the encoder sets for 10,000 random user histories, decoded by the decoder ingest uses,
/// claims only events that happened, tells as much as any value could, and gives a revenue range that holds the
/// revenue, or the nearest one where no value may say it.
@Suite struct RoundTripTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let names = ["tutorial", "level_5", "share", "subscribe"]
    static let histories = 10_000
    /// Seeds start here: 1,000 unless `COUNTERSIGN_ROUND_TRIP_SEED` names another base, for a run with fresh seeds.
    static let base = UInt64(ProcessInfo.processInfo.environment["COUNTERSIGN_ROUND_TRIP_SEED"] ?? "") ?? 1_000

    @Test(arguments: ["game", "shop", "subscription"])
    func exampleSchemas(name: String) throws {
        let bytes = Array(try Data(contentsOf: Self.root.appendingPathComponent("examples/schemas/\(name).json")))
        let schema = try #require(SchemaReader.check(bytes).schema)
        try Self.roundTrip(schema, seed: Self.base + 1, label: "\(name), seed \(Self.base + 1)")
    }

    @Test(arguments: 0..<12)
    func randomSchemas(seed: Int) throws {
        var generator = SeededGenerator(seed: Self.base + UInt64(seed))
        let document = Self.randomSchema(&generator)
        let check = SchemaReader.check(Array(document.utf8))
        let schema = try #require(check.schema, "seed \(Self.base + UInt64(seed)): the generated schema does not check: \(check.errors)\n\(document)")
        try Self.roundTrip(schema, seed: Self.base + UInt64(seed), label: "random schema, seed \(Self.base + UInt64(seed))")
    }

    /// What one value means, read with the decoder ingest uses.
    struct Meaning {
        var needs: [String: Int]
        var revenue: RevenueRange?
        /// Events without revenue that it claims, counted, plus one for revenue when the user has some.
        func told(revenue paid: Bool) -> Int { needs.values.reduce(0, +) + (revenue != nil && paid ? 1 : 0) }
        func fits(_ events: [String: Int]) -> Bool { needs.allSatisfy { events[$0.key, default: 0] >= $0.value } }
    }

    static func meaning(_ schema: ConversionSchema, _ conversionClass: ConversionClass, window: Int, fine: Int?, coarse: CoarseValue.Level?, at time: Date) -> Meaning? {
        guard case .success(let decoded) = SchemaDecoder.decode(schema, conversionClass: conversionClass, window: window, fine: fine, coarse: coarse,
                                                                  sourceIdentifier: nil, at: time), decoded.defined else { return nil }
        var needs: [String: Int] = [:]
        for event in decoded.events where event.revenue == nil { needs[event.name, default: 0] += event.count ?? 1 }
        return Meaning(needs: needs, revenue: decoded.revenue)
    }

    static func roundTrip(_ schema: ConversionSchema, seed: UInt64, label: String) throws {
        let compiled = EncodingSchemaCompiler.compile(schema)
        let version = try #require(schema.versions.last)
        let time = version.effectiveFrom
        var generator = SeededGenerator(seed: seed)
        let top = (schema.versions.flatMap { $0.classes.values }.count > 0) ? 600.0 : 100
        for conversionClass in ConversionClass.allCases where version.classes[conversionClass] != nil {
            let encoderClass: EncodingSchema.ConversionClass = conversionClass == .install ? .install : .reengagement
            // Every value's meaning, decoded once per window.
            let fineMeanings = (0...2).map { window in (0...63).map { meaning(schema, conversionClass, window: window, fine: $0, coarse: nil, at: time) } }
            let coarseMeanings = (0...2).map { window in CoarseValue.Level.allCases.map { meaning(schema, conversionClass, window: window, fine: nil, coarse: $0, at: time) } }
            var failures = 0
            for history in 0..<histories where failures < 5 {
                var events: [String: Int] = [:]
                for name in names where Bool.random(using: &generator) { events[name] = Int.random(in: 1...4, using: &generator) }
                let revenue = Int.random(in: 0..<10, using: &generator) < 4 ? 0 : (Double(Int.random(in: 1...Int(top * 100), using: &generator)) / 100)
                let progress = UserProgress(events: events, revenue: revenue, hoursSinceConversion: Double.random(in: 0..<840, using: &generator))
                guard let update = ConversionEncoder.update(compiled, conversionClass: encoderClass, progress: progress, at: time, api: .adAttributionKit) else {
                    let window = progress.window ?? 0
                    let anyFits = fineMeanings[window].contains { $0?.fits(events) == true } || coarseMeanings[window].contains { $0?.fits(events) == true }
                    if anyFits { Issue.record("\(label), history \(history): no update though a value fits \(events)"); failures += 1 }
                    continue
                }
                let checks: [(String, Meaning?, [Meaning?])] = [
                    ("fine \(update.fine.map(String.init) ?? "-")", update.fine.flatMap { fineMeanings[update.window][$0] }, fineMeanings[update.window]),
                    ("coarse \(update.coarse?.rawValue ?? "-")", update.coarse.flatMap { CoarseValue.Level(rawValue: $0.rawValue) }.flatMap { level in
                        coarseMeanings[update.window][CoarseValue.Level.allCases.firstIndex(of: level) ?? 0] }, coarseMeanings[update.window]),
                ]
                for (what, chosen, all) in checks {
                    let candidates = all.compactMap { $0 }.filter { $0.fits(events) }
                    guard let chosen else {
                        if !candidates.isEmpty { Issue.record("\(label), history \(history): \(what) left unset though a value fits"); failures += 1 }
                        continue
                    }
                    let context = "\(label), history \(history), window \(update.window), \(what), events \(events), revenue \(revenue)"
                    // Only events that happened.
                    if !chosen.fits(events) { Issue.record("\(context): claims events that did not happen: \(chosen.needs)"); failures += 1 }
                    // As much as any value could tell.
                    let paid = revenue > 0
                    let claimable = candidates.filter { paid || $0.revenue == nil }
                    let most = (claimable.isEmpty ? candidates : claimable).map { $0.told(revenue: paid) }.max() ?? 0
                    if chosen.told(revenue: paid) < most { Issue.record("\(context): tells \(chosen.told(revenue: paid)) where a value tells \(most)"); failures += 1 }
                    // Revenue held, or none of the values that tell as much holds it.
                    if paid, let range = chosen.revenue, !(range.min <= revenue && revenue <= range.max) {
                        let holding = candidates.contains { $0.told(revenue: paid) == most && $0.revenue.map { $0.min <= revenue && revenue < $0.max } == true }
                        if holding { Issue.record("\(context): decodes to \(range.min)-\(range.max) though a value telling as much holds the revenue"); failures += 1 }
                    }
                    if !paid, chosen.revenue != nil, claimable.contains(where: { $0.told(revenue: false) == most }) {
                        Issue.record("\(context): claims revenue the user does not have"); failures += 1
                    }
                }
            }
        }
    }

    /// A random schema document: a table or bit fields for window 0's fine values, coarse values in each window or
    /// inherited, sometimes re-engagements, events with counts and disjoint revenue ranges.
    static func randomSchema(_ generator: inout SeededGenerator) -> String {
        var rangeStart = 0.0
        func revenue(_ width: Double) -> String {
            let low = rangeStart
            rangeStart += width
            return "\"revenue\": { \"min\": \(String(format: "%.2f", low)), \"max\": \(String(format: "%.2f", rangeStart)) }"
        }
        func events(_ generator: inout SeededGenerator, revenueWidth: Double?) -> String {
            var list: [String] = []
            for name in names.shuffled(using: &generator).prefix(Int.random(in: 0...2, using: &generator)) {
                list.append(Bool.random(using: &generator) ? "{ \"name\": \"\(name)\", \"count\": \(Int.random(in: 1...3, using: &generator)) }" : "{ \"name\": \"\(name)\" }")
            }
            if let revenueWidth { list.append("{ \"name\": \"purchase\", \(revenue(revenueWidth)) }") }
            return "\"events\": [" + list.joined(separator: ", ") + "]"
        }
        func coarse(_ generator: inout SeededGenerator) -> String {
            rangeStart = 0
            let levels = ["low", "medium", "high"].map { level in
                "\"\(level)\": { " + events(&generator, revenueWidth: level == "low" ? nil : Double(Int.random(in: 5...200, using: &generator))) + " }"
            }
            return "\"coarse\": { " + levels.joined(separator: ", ") + " }"
        }
        func fine(_ generator: inout SeededGenerator) -> String {
            rangeStart = 0
            if Bool.random(using: &generator) {
                // A table: consecutive runs of values, some with revenue.
                var values: [String] = []
                var value = 0
                while value < 64 {
                    let last = min(63, value + Int.random(in: 0...8, using: &generator))
                    let width: Double? = value > 0 && Bool.random(using: &generator) ? Double(Int.random(in: 1...40, using: &generator)) : nil
                    values.append("{ \"range\": [\(value), \(last)], " + events(&generator, revenueWidth: width) + " }")
                    value = last + 1
                }
                return "\"fine\": { \"values\": [" + values.joined(separator: ", ") + "] }"
            }
            // Bit fields: a revenue field below and an events field above.
            let revenueBits = Int.random(in: 2...4, using: &generator)
            let revenueValues = (0..<(1 << revenueBits)).map { value in
                "{ \"value\": \(value), " + (value == 0 ? "\"events\": []" : "\"events\": [{ \"name\": \"purchase\", \(revenue(Double(Int.random(in: 1...30, using: &generator)))) }]") + " }"
            }
            let eventValues = (0..<(1 << (6 - revenueBits))).map { value in "{ \"value\": \(value), " + events(&generator, revenueWidth: nil) + " }" }
            return "\"fine\": { \"bits\": [ { \"name\": \"revenue\", \"bits\": [0, \(revenueBits - 1)], \"values\": [" + revenueValues.joined(separator: ", ")
                + "] }, { \"name\": \"progress\", \"bits\": [\(revenueBits), 5], \"values\": [" + eventValues.joined(separator: ", ") + "] } ] }"
        }
        func conversionClass(_ generator: inout SeededGenerator) -> String {
            var windows = ["\"0\": { " + fine(&generator) + ", " + coarse(&generator) + " }"]
            for window in 1...2 where Bool.random(using: &generator) { windows.append("\"\(window)\": { " + coarse(&generator) + " }") }
            return "{ \"windows\": { " + windows.joined(separator: ", ") + " } }"
        }
        var classes = "\"install\": " + conversionClass(&generator)
        if Bool.random(using: &generator) { classes += ", \"re-engagement\": " + conversionClass(&generator) }
        return """
        { "format": "countersign.conversion-schema/1", "app": "1108187390", "currency": "USD",
          "versions": [ { "version": 1, "effective-from": "2026-01-01T00:00:00Z", \(classes) } ] }
        """
    }
}
