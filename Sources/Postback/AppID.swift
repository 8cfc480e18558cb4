/// An app's App Store id: the item a postback advertises, the app a schema, a registry entry, an API key's limit, a
/// spend row or an Apple Ads record names. One type wherever an app is named, so an id held as text in one place and as
/// a number in another cannot disagree.
public struct AppID: Hashable, Comparable, Sendable, LosslessStringConvertible, ExpressibleByIntegerLiteral {
    /// The id as a number.
    public let number: Int64

    /// The app numbered `number`.
    public init(_ number: Int64) {
        self.number = number
    }

    /// The app a literal numbers (`let game: AppID = 1108187390`).
    public init(integerLiteral number: Int64) {
        self.number = number
    }

    /// The app `text` names: decimal digits only (no sign, no spaces), from 1 up; nil for anything else.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let number = Int64(text), number >= 1 else {
            return nil
        }
        self.number = number
    }

    /// The id in decimal, as App Store ids are written.
    public var description: String { String(number) }

    public static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.number < rhs.number }
}

extension Postback {
    /// The advertised app.
    public var app: AppID { AppID(advertisedItemID) }
}
