/// Which characters names and labels people read may not hold: app, ad network, source and campaign names, names in
/// schemas, Apple Ads' names, caller-chosen ids. Such text is shown in the dashboard, reports and exports, so a
/// character that changes how the text around it is shown, or shows nothing at all, could make one name pass for
/// another ("Display spoofing").
///
/// Refused: control characters (Cc), format characters (Cf: bidi overrides and isolates such as U+202E, zero-width
/// space, joiner and non-joiner, the byte order mark, the soft hyphen, tag characters), the line and paragraph
/// separators (U+2028, U+2029) and the 66 noncharacters (U+FDD0-U+FDEF and the last two code points of every plane,
/// such as U+FFFF and U+10FFFF). Code points not assigned yet are accepted, so names in scripts a newer Unicode adds
/// still work, and so are letters, marks, symbols and emoji with skin tones, U+FE0F or as country flags ("Café 🎮");
/// emoji sequences joined with U+200D (ZERO WIDTH JOINER) and subdivision flags (tag characters) are not.
public enum LabelText {
    /// Whether `scalar` may not appear in a name or label.
    public static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        if properties.isNoncharacterCodePoint { return true }
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// Whether `text` holds any scalar ``isRefused(_:)`` refuses.
    public static func hasRefused(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.contains(where: Self.isRefused)
    }

    /// What is wrong with `text` as a name, naming the first refused scalar (`holds U+202E, a format character`), or
    /// nil when nothing is.
    public static func problem(_ text: some StringProtocol) -> String? {
        guard let scalar = text.unicodeScalars.first(where: Self.isRefused) else { return nil }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        let kind: String
        if scalar.properties.isNoncharacterCodePoint {
            kind = "a noncharacter"
        } else {
            switch scalar.properties.generalCategory {
            case .control: kind = "a control character"
            case .format: kind = "a format character (bidi, zero-width or invisible)"
            default: kind = "a line or paragraph separator"
            }
        }
        return "holds \(code), \(kind)"
    }

    /// The rule as messages state it, after "without".
    public static let refusedKinds = "control, format (bidi, zero-width), line or paragraph separator or noncharacter code points"
}
