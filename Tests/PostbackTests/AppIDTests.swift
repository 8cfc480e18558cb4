import Testing
import Postback

/// One app identifier type (issue 29, item 6): App Store ids are read from text one way everywhere.
@Suite struct AppIDTests {
    @Test func onlyDecimalDigitsFromOneUpAreAppIDs() {
        #expect(AppID("1108187390") == 1_108_187_390)
        #expect(AppID("9223372036854775807")?.number == Int64.max)
        for text in ["", "0", "+1108187390", "-5", " 1108187390", "1108187390 ", "0x1F", "1e9", "１２３", "9223372036854775808", "١٢٣"] {
            #expect(AppID(text) == nil, "\(text)")
        }
    }

    @Test func textAndOrderFollowTheNumber() {
        let ids: [AppID] = [525_463_029, 1_108_187_390, 10_738_027_756]
        #expect(ids.map(\.description) == ["525463029", "1108187390", "10738027756"])
        #expect(ids.map(\.description).compactMap(AppID.init) == ids)
        #expect(ids.shuffled().sorted() == ids)
    }
}
