import Postback
import Testing
@testable import Store

/// The encoder symptoms read from grouped postbacks: each appears past its threshold, and not before.
@Suite struct EncoderHealthTests {
    static let app = AppID(1_108_187_390)

    static func group(day: String = "2026-11-20", window: Int = 0, tier: Int = 2, fine: Int? = 7, coarse: String? = nil, status: String = "decoded", _ count: Int) -> EncoderHealth.Group {
        EncoderHealth.Group(app: app, day: day, window: window, tier: tier, fine: fine, coarse: coarse, status: status, postbacks: count)
    }

    static func kinds(_ groups: [EncoderHealth.Group], revisions: [(app: AppID, revision: Int, day: String)] = []) -> [EncoderHealth.Kind] {
        EncoderHealth(groups: groups, revisions: revisions).symptoms.map(\.kind)
    }

    @Test func nullOrZeroWhereTheTierAllowsAValue() {
        // 10 of 20 allowed postbacks carry no value: half. Tier 0 postbacks (no value allowed) are not counted.
        let flagged = [Self.group(fine: nil, 10), Self.group(fine: 5, 10), Self.group(tier: 0, fine: nil, 50)]
        #expect(Self.kinds(flagged) == [.nullOrZero])
        let health = EncoderHealth(groups: flagged, revisions: [])
        #expect(health.days.first?.valueAllowed == 20 && health.days.first?.nulls == 10 && health.days.first?.postbacks == 70)
        #expect(Self.kinds([Self.group(fine: nil, 9), Self.group(fine: 5, 11)]) == [], "45% without a value is below half")
        // 0 is many schemas' "nothing yet": only nearly all of them (95%) is a symptom.
        #expect(Self.kinds([Self.group(fine: 0, 18), Self.group(fine: 5, 2)]) == [], "90% of 0")
        #expect(Self.kinds([Self.group(fine: 0, 19), Self.group(fine: 5, 1)]) == [.nullOrZero], "95% of 0")
        #expect(Self.kinds([Self.group(fine: nil, 19)]) == [], "19 postbacks are too few to read")
        // Tier 1 in window 0 carries a coarse value: a postback with one is not null.
        #expect(Self.kinds([Self.group(tier: 1, fine: nil, coarse: "low", 30)]) == [.fixedCoarse])
    }

    @Test func aCoarseValueThatNeverChanges() {
        #expect(Self.kinds([Self.group(window: 1, tier: 2, fine: nil, coarse: "high", 12), Self.group(day: "2026-11-21", window: 2, tier: 2, fine: nil, coarse: "high", 8)]) == [.fixedCoarse])
        #expect(Self.kinds([Self.group(window: 1, tier: 2, fine: nil, coarse: "high", 19), Self.group(window: 1, tier: 2, fine: nil, coarse: "low", 1)]) == [])
        let symptom = EncoderHealth(groups: [Self.group(window: 1, tier: 2, fine: nil, coarse: "high", 25)], revisions: []).symptoms.first
        #expect(symptom?.detail == "always high" && symptom?.postbacks == 25)
    }

    @Test func valuesTheSchemaDoesNotDefine() {
        #expect(Self.kinds([Self.group(status: "undefined_value", 5), Self.group(95)]) == [.undefinedValues])
        #expect(Self.kinds([Self.group(status: "undefined_value", 4), Self.group(20)]) == [], "fewer than 5")
        #expect(Self.kinds([Self.group(status: "undefined_value", 5), Self.group(96)]) == [], "under 5%")
    }

    @Test func aSuddenChangeAfterARevision() {
        let before = (14...19).map { Self.group(day: "2026-11-\($0)", fine: 3, 40) }
        let afterSame = (20...25).map { Self.group(day: "2026-11-\($0)", fine: 5, 40) }
        let afterChanged = (20...25).map { Self.group(day: "2026-11-\($0)", fine: $0 % 2 == 0 ? 40 : 3, 40) }
        let revision = [(app: Self.app, revision: 2, day: "2026-11-20")]
        #expect(Self.kinds(before + afterSame, revisions: revision) == [], "3 and 5 are in one group of eight")
        #expect(Self.kinds(before + afterChanged, revisions: [(app: Self.app, revision: 1, day: "2026-11-20")]) == [], "a first revision")
        #expect(Self.kinds(Array(before.prefix(4)) + afterChanged, revisions: revision) == [], "160 postbacks before are too few")
        let symptoms = EncoderHealth(groups: before + afterChanged, revisions: revision).symptoms
        #expect(symptoms.map(\.kind) == [.mixChanged] && symptoms.first?.detail == "revision 2" && symptoms.first?.share == 0.5)
        #expect(Self.kinds(before + afterChanged) == [], "no revision, no symptom")
    }
}
