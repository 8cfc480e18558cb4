import PostbackMint
import Store
import Testing

/// The compact list of a network's identifiers (trust round 4, finding 3): each kept once whatever its case, spelt as
/// first given, in the order given, in far less memory than strings.
@Suite struct ClaimedIdentifiersTests {
    @Test func eachIdentifierIsKeptOnceAsFirstSpelt() {
        let upper = Mint.uuid("one"), lower = Mint.uuid("two").lowercased()
        // A UUID whose letters mix cases, kept letter for letter.
        let mixed = String(Mint.uuid("three").enumerated().map { $0.offset % 2 == 0 ? Character($0.element.lowercased()) : $0.element })
        let given = [upper, lower, mixed, "Order-17", "ÉTÉ-9", "x"]
        var claimed = ClaimedIdentifiers()
        for identifier in given {
            let kept = claimed.insert(identifier)
            #expect(kept, "\(identifier)")
        }
        for identifier in [upper.lowercased(), lower.uppercased(), mixed.uppercased(), "order-17", "été-9", "X"] {
            let kept = claimed.insert(identifier)
            #expect(!kept, "\(identifier) is the same as one kept")
            #expect(claimed.contains(identifier))
        }
        #expect(!claimed.contains(Mint.uuid("four")))
        #expect(!claimed.contains("order-1"))
        #expect(claimed.count == given.count)
        #expect(claimed.all == given)
        var cursor = ClaimedIdentifiers.Cursor()
        let steps = (0..<3).map { _ in claimed.next(4, from: &cursor) }
        #expect(steps == [Array(given.prefix(4)), Array(given.suffix(2)), []])
    }

    /// The table grows past its first size without losing or repeating one, and a UUID costs far less than a string.
    @Test func manyIdentifiersStayFoundAndSmall() {
        let count = 200_000
        var claimed = ClaimedIdentifiers()
        let identifiers = (0..<count).map { Mint.uuid("identifier-\($0)").lowercased() }
        for identifier in identifiers { claimed.insert(identifier) }
        for identifier in identifiers.prefix(1000) {
            let kept = claimed.insert(identifier.uppercased())
            #expect(!kept)
        }
        #expect(claimed.count == count)
        #expect(claimed.all == identifiers)
        // 17 bytes a UUID and a table at most half full of 4-byte slots: under 32 bytes each, where a string of 36
        // characters alone takes more than 48.
        #expect(claimed.storageBytes < count * 32, "\(claimed.storageBytes) bytes")
    }
}
