/// A CSV cell written so spreadsheets read it as the text it is.
///
/// Quoting follows RFC 4180. Text that begins with `=`, `+`, `-`, `@`, a tab or a carriage return would run as a formula
/// in Excel, LibreOffice or Google Sheets, and much of what reaches an export is attacker-controlled (ids of unknown-kid
/// postbacks, iAd names, an app's install id). As OWASP advises, such a cell gets a leading `'` and is quoted, so it
/// shows as text. Numbers that Countersign computes are written unchanged.
public enum CSVField {
    /// Appends the cell for `text` to `bytes`.
    public static func write(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { write(utf8: $0, into: &bytes) }
    }

    /// Appends the cell for the UTF-8 text `text` to `bytes`.
    static func write(utf8 text: UnsafeBufferPointer<UInt8>, into bytes: inout [UInt8]) {
        let neutralised = text.first.map(startsFormula) == true
        guard neutralised || needsQuotes(text) else { return bytes.append(contentsOf: text) }
        bytes.append(UInt8(ascii: "\""))
        if neutralised { bytes.append(UInt8(ascii: "'")) }
        for byte in text {
            if byte == UInt8(ascii: "\"") { bytes.append(byte) }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether `text` holds a comma, a quote or a line break.
    private static func needsQuotes(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text where byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == 0x0A || byte == 0x0D { return true }
        return false
    }

    private static func startsFormula(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "=") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "@") || byte == 0x09 || byte == 0x0D
    }
}
