import Foundation
import Testing
import Postback

/// `Timestamp.parse` reads a fraction of a second as `Double` reads the same digits, whatever their number.
@Suite struct TimestampTests {
    @Test func aFractionIsReadAsDoubleReadsIt() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 1...20 {
            for _ in 0..<200 {
                let digits = String((0..<length).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
                let parsed = try #require(Timestamp.parse("2026-11-29T10:11:12.\(digits)Z"))
                let expected = Date(timeIntervalSince1970: 1_795_947_072 + Double("0." + digits)!)
                #expect(parsed == expected, "\(digits)")
            }
        }
        #expect(Timestamp.parse("2026-11-29T10:11:12.Z") == nil)
        #expect(Timestamp.parse("2026-11-29T10:11:12.5x") == nil)
        #expect(Timestamp.parse("2026-11-29") == Date(timeIntervalSince1970: 1_795_910_400))
    }
}
