import CountersignEncoder
import Foundation
import Testing

/// The encoder's rule, as docs/schemas.md states it, on hand-made rules.
@Suite struct ConversionEncoderTests {
    typealias Rule = EncodingSchema.Rule<Int>

    static func rule(_ value: Int, _ events: [(String, Int?)] = [], _ range: (Double, Double)? = nil) -> Rule {
        Rule(value: value, events: events.map { EncodingSchema.Event(name: $0.0, count: $0.1) }
            + (range == nil ? [] : [EncodingSchema.Event(name: "purchase", revenue: true)]),
             revenue: range.map { EncodingSchema.Revenue(min: $0.0, max: $0.1) })
    }

    static func choose(_ rules: [Rule], events: [String: Int] = [:], revenue: Double = 0) -> Int? {
        ConversionEncoder.choose(rules, UserProgress(events: events, revenue: revenue, hoursSinceConversion: 1))?.value
    }

    let ladder = [rule(0), rule(1, [], (0.01, 5)), rule(2, [], (5, 10)), rule(3, [], (20, 50)), rule(9, [], (5, 10))]

    @Test func revenueTakesTheRangeThatHoldsItOrTheNearest() {
        #expect(Self.choose(ladder) == 0, "no revenue: the value without revenue")
        #expect(Self.choose(ladder, revenue: 4.99) == 1)
        #expect(Self.choose(ladder, revenue: 5) == 2, "a shared bound goes up; the lowest of the values with that range")
        #expect(Self.choose(ladder, revenue: 50) == 3, "the top range includes its max")
        #expect(Self.choose(ladder, revenue: 0.001) == 1, "below the lowest range")
        #expect(Self.choose(ladder, revenue: 15) == 2, "in a gap, a tie goes to the lower range")
        #expect(Self.choose(ladder, revenue: 16) == 3)
        #expect(Self.choose(ladder, revenue: 500) == 3, "above the highest")
        #expect(Self.choose([Self.rule(4, [], (0, 1))]) == 4, "no value without revenue: the range nearest 0")
    }

    @Test func aValueClaimsOnlyEventsThatHappenedAndTheMostOfThemWins() {
        let rules = [Self.rule(0), Self.rule(1, [("tutorial", nil)]), Self.rule(2, [("tutorial", nil), ("level", 3)]),
                     Self.rule(3, [("share", nil)]), Self.rule(10, [("tutorial", nil)], (0.01, 100))]
        #expect(Self.choose(rules, events: ["level": 5]) == 0, "level alone fits no value but 0")
        #expect(Self.choose(rules, events: ["tutorial": 1, "level": 2]) == 1, "three levels are needed for 2")
        #expect(Self.choose(rules, events: ["tutorial": 1, "level": 3]) == 2)
        #expect(Self.choose(rules, events: ["tutorial": 1], revenue: 4) == 10, "tutorial and revenue tell more than tutorial")
        #expect(Self.choose(rules, events: ["tutorial": 1, "share": 1]) == 1, "a tie of one event each: the lowest value")
        #expect(Self.choose([Self.rule(5, [("tutorial", nil)])]) == nil, "nothing may be claimed")
    }

    static func schema(_ windows: [EncodingSchema.Window]) -> EncodingSchema {
        EncodingSchema(app: "1", currency: "USD", versions: [EncodingSchema.Version(version: 1, effectiveFrom: Date(timeIntervalSince1970: 0), install: windows, reengagement: nil)])
    }

    @Test func windowsLockAndTheAPIsRules() {
        let coarse: [EncodingSchema.Rule<EncodingSchema.CoarseValue>] = [.init(value: .low, events: [], revenue: nil),
                                                          .init(value: .high, events: [.init(name: "purchase", revenue: true)], revenue: .init(min: 0.01, max: 100))]
        let window = EncodingSchema.Window(fine: ladder, coarse: coarse)
        let schema = Self.schema([window, window, window])
        func update(_ revenue: Double, hours: Double, _ api: PostbackAPI, previous: ConversionUpdate? = nil) -> ConversionUpdate? {
            ConversionEncoder.update(schema, progress: UserProgress(revenue: revenue, hoursSinceConversion: hours), api: api, previous: previous)
        }
        #expect(update(7, hours: 10, .skadnetwork4) == ConversionUpdate(window: 0, fine: 2, coarse: .high, lock: false))
        #expect(update(70, hours: 10, .adAttributionKit)?.lock == true, "3 holds the top range and tells as much as any value: nothing can change it")
        #expect(update(70, hours: 100, .adAttributionKit) == ConversionUpdate(window: 1, fine: 3, coarse: .high, lock: true), "window 1 locks at its highest coarse value")
        #expect(update(70, hours: 839, .skadnetwork4)?.window == 2)
        #expect(update(70, hours: 840, .skadnetwork4) == nil, "after the last window")
        #expect(update(7, hours: 10, .skadnetwork3) == ConversionUpdate(window: 0, fine: 2, coarse: nil, lock: false))
        #expect(update(3, hours: 20, .skadnetwork3, previous: ConversionUpdate(window: 0, fine: 2, coarse: nil, lock: false)) == nil,
                "before SKAdNetwork 4.0 only an increase takes effect")
        #expect(update(3, hours: 20, .skadnetwork4, previous: ConversionUpdate(window: 0, fine: 2, coarse: nil, lock: false))?.fine == 1, "from 4.0 a value may go down")
    }

    @Test func aWindowLocksOnlyWhenNothingLaterCanChangeItsValue() {
        let tutorial = Self.rule(1, [("tutorial", nil)])
        let purchase = Self.rule(2, [], (0.01, 10))
        let both = Self.rule(3, [("tutorial", nil)], (0.01, 10))
        #expect(!ConversionEncoder.isFinal(tutorial, among: [tutorial, purchase]), "a purchase later would take value 2")
        #expect(!ConversionEncoder.isFinal(purchase, among: [tutorial, purchase, both]), "a tutorial later would take value 3")
        #expect(ConversionEncoder.isFinal(both, among: [tutorial, purchase, both]))
        #expect(ConversionEncoder.isFinal(tutorial, among: [Self.rule(0), tutorial]), "no ranges: the most telling value is final")
    }

    @Test func aRangeOfOneAmountHoldsItAndTheNarrowerRangeWins() {
        let rules = [Self.rule(20, [], (4.99, 14.99)), Self.rule(30, [], (4.99, 4.99))]
        #expect(Self.choose(rules, revenue: 4.99) == 30)
        #expect(Self.choose(rules, revenue: 5) == 20)
    }

    /// Records what would be sent to Apple.
    actor Recorder: ConversionUpdating {
        var calls: [ConversionUpdate] = []
        nonisolated func apply(_ update: ConversionUpdate, conversionClass: EncodingSchema.ConversionClass, api: PostbackAPI) async throws {
            await append(update)
        }
        func append(_ update: ConversionUpdate) { calls.append(update) }
    }

    @Test func theReporterCallsAppleOnlyWhenAValueChanges() async throws {
        let recorder = Recorder()
        let reporter = ConversionReporter(schema: Self.schema([EncodingSchema.Window(fine: ladder, coarse: [])]), api: .adAttributionKit, updater: recorder)
        try await reporter.record(UserProgress(revenue: 1, hoursSinceConversion: 1))
        try await reporter.record(UserProgress(revenue: 2, hoursSinceConversion: 2))
        try await reporter.record(UserProgress(revenue: 6, hoursSinceConversion: 3))
        #expect(await recorder.calls.map(\.fine) == [1, 2])
    }
}
