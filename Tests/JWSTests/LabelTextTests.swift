import Testing
import JWS

/// Names and labels may not hold characters that change how the text around them is shown, or show nothing at all
/// (trust round 4, finding 8): bidi overrides, zero-width characters, separators, noncharacters.
@Suite struct LabelTextTests {
    @Test(arguments: [
        "a\u{202E}b",   // RIGHT-TO-LEFT OVERRIDE
        "\u{200B}x",    // ZERO WIDTH SPACE
        "a\u{2028}b",   // LINE SEPARATOR
        "a\u{2029}b",   // PARAGRAPH SEPARATOR
        "x\u{10FFFF}",  // a noncharacter, the last code point
        "x" + String(Character(Unicode.Scalar(0xFDD0)!)),  // a noncharacter (the compiler refuses it as a literal)
        "\u{FEFF}x",    // ZERO WIDTH NO-BREAK SPACE (byte order mark)
        "a\u{00AD}b",   // SOFT HYPHEN
        "a\u{2066}b",   // LEFT-TO-RIGHT ISOLATE
        "\u{1F469}\u{200D}\u{1F4BB}", // an emoji joined with ZERO WIDTH JOINER
        "a\u{7}b",      // a control character, as before
        "a\u{85}b",     // NEXT LINE, a C1 control
    ])
    func refusesInvisibleAndReorderingCharacters(text: String) {
        #expect(LabelText.hasRefused(text))
        #expect(LabelText.problem(text) != nil)
    }

    @Test(arguments: ["Café 🎮", "Cafe\u{301}", "Merge Kingdom", "東京", "عربي", "\u{1F1E9}\u{1F1EA}", "\u{1F44D}\u{1F3FD}", "\u{2764}\u{FE0F}", "Summer sale (DE) – 50%", "x\u{378}"])
    func acceptsNamesInAnyScript(text: String) {
        #expect(!LabelText.hasRefused(text))
        #expect(LabelText.problem(text) == nil)
    }

    @Test func theProblemNamesTheCodePoint() {
        #expect(LabelText.problem("a\u{202E}b") == "holds U+202E, a format character (bidi, zero-width or invisible)")
        #expect(LabelText.problem("x\u{10FFFF}") == "holds U+10FFFF, a noncharacter")
        #expect(LabelText.problem("a\u{7}b") == "holds U+0007, a control character")
        #expect(LabelText.problem("a\u{2029}b") == "holds U+2029, a line or paragraph separator")
        #expect(LabelText.isRefused("\u{200D}"))
        #expect(!LabelText.isRefused("é"))
    }
}
