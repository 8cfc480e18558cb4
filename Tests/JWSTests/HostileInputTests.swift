import Testing
@testable import JWS

/// Bodies an attacker can send to any public route: the parser must stay linear and byte-exact (issue 11).
@Suite struct HostileJSONTests {
    /// `{"k0":0,"k1":1,...}` with `count` distinct members.
    static func wideObject(_ count: Int, repeating duplicate: Int? = nil) -> [UInt8] {
        var text = "{"
        for index in 0..<count {
            if index > 0 { text += "," }
            text += "\"k\(index)\":\(index)"
        }
        if let duplicate { text += ",\"k\(duplicate)\":0" }
        return Array((text + "}").utf8)
    }

    /// 200,000 members: a comparison of each name with every earlier one (2·10¹⁰ comparisons) would run for
    /// minutes; the hashed check takes well under a second, so the time limit separates the two.
    @Test(.timeLimit(.minutes(1)))
    func wideObjectsParseInLinearTime() throws {
        let object = try #require(try JSONParser.parse(Self.wideObject(200_000)).object)
        #expect(object.members.count == 200_000)
        #expect(object["k199999"]?.int64 == 199_999)
    }

    @Test(arguments: [2, 15, 16, 17, 5_000])
    func duplicatesAreFoundAtEverySize(count: Int) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Self.wideObject(count, repeating: 0)) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Self.wideObject(count, repeating: count - 1)) }
    }

    @Test func namesAreComparedByteForByte() throws {
        // "K" (U+004B) and KELVIN SIGN (U+212A) are canonically equivalent but different names.
        let object = try #require(try JSONParser.parse(Array(#"{"K":1,"\u212A":2}"#.utf8)).object)
        #expect(object.members.count == 2)
        #expect(object["K"]?.int64 == 1)
        #expect(object["\u{212A}"]?.int64 == 2)
        // "é" precomposed and decomposed are two names too, in a scanned and in a hashed object.
        for padding in [0, 20] {
            let extra = (0..<padding).map { ",\"p\($0)\":0" }.joined()
            let text = "{\"\u{E9}\":1,\"e\u{301}\":2\(extra)}"
            let parsed = try #require(try JSONParser.parse(Array(text.utf8)).object)
            #expect(parsed["\u{E9}"]?.int64 == 1)
            #expect(parsed["e\u{301}"]?.int64 == 2)
        }
    }

    @Test func publicBodiesHaveABudget() throws {
        let limits = JSONLimits(maximumValues: 10, maximumStringBytes: 8)
        #expect(throws: Never.self) { try JSONParser.parse(Self.wideObject(10), limits: limits) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Self.wideObject(11), limits: limits) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array("[1,2,3,4,5,6,7,8,9,10,11]".utf8), limits: limits) }
        #expect(throws: Never.self) { try JSONParser.parse(Array(#"{"a":"12345678"}"#.utf8), limits: limits) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(#"{"a":"123456789"}"#.utf8), limits: limits) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(#"{"a":"1234567\n"}"#.utf8), limits: limits) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(#"{"123456789":1}"#.utf8), limits: limits) }
        // 7,200 members, the attack's size, stop at the public budget.
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Self.wideObject(7_200), limits: .publicBody) }
    }

    /// `\n`, `\r` and `\t` are text where strings may span lines, and each is refused where they may not.
    @Test(arguments: [("n", "\n"), ("r", "\r"), ("t", "\t")])
    func lineEscapesFollowTheLimits(escape: String, character: String) throws {
        let text = Array(#"{"name":"Merge\\#(escape)Kingdom"}"#.utf8)
        let parsed = try #require(try JSONParser.parse(text).object)
        #expect(parsed["name"]?.string == "Merge\(character)Kingdom")
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(text, limits: .publicBody) }
    }

    @Test func keyIDsMatchByteForByte() throws {
        let key = try ECPrivateKey.generate()
        let ring = try KeyRing([KeyEntry(keyID: "K/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")])
        #expect(ring.entry(keyID: "K/0", usage: .aak) != nil)
        #expect(ring.entry(keyID: "\u{212A}/0", usage: .aak) == nil)
    }
}
