/// A CSV cell written so spreadsheets read it as the text it is.
///
/// Quoting follows RFC 4180. Text that begins with `=`, `+`, `-`, `@`, a tab or a carriage return would run as a formula
/// in Excel, LibreOffice or Google Sheets, and much of what reaches an export is attacker-controlled (ids of unknown-kid
/// postbacks, iAd names, an app's install id). As OWASP advises, such a cell gets a leading `'` and is quoted, so it
/// shows as text. Numbers that Countersign computes are written unchanged.
public enum CSVField {
    /// The cell for `text`.
    public static func text(_ text: String) -> String {
        let neutralised = text.utf8.first.map(startsFormula) == true
        let needsQuotes = neutralised || text.utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
        guard needsQuotes else { return text }
        let body = (neutralised ? "'" : "") + text.replacingOccurrences(of: "\"", with: "\"\"")
        return "\"" + body + "\""
    }

    private static func startsFormula(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "=") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "@") || byte == 0x09 || byte == 0x0D
    }
}
