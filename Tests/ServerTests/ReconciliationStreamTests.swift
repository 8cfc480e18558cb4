import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import PostbackMint
import Store
import Testing
import TestSupport
@testable import CountersignServer

/// Finding 3 of trust round 4: a reconciliation upload was collected whole, every identifier made a string, and the
/// whole table and its text built before the first byte (a million identifiers cost about 470 MB). The list is now read
/// as it arrives and the answer written as it is found. Read and written in steps of a few bytes, identifiers and
/// postbacks, the answer is byte for byte the one a whole reading gives, and a bad list is refused as a whole reading
/// refuses it, before anything is answered.
@Suite struct ReconciliationStreamTests {
    static let network = "example123.skadnetwork"
    /// Steps far smaller than the server's: the list read 5 bytes at a time, 2 identifiers a transaction, pages of 2
    /// postbacks, the answer handed on every 16 bytes.
    static let small = PostbackReconciliation.Sizes(listSlice: 5, lookup: 2, page: 2, answer: 16)

    /// What the requests answered, carried out of the server's run.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var bodies: [String: String] = [:]

        func set(_ name: String, _ body: String) { lock.withLock { bodies[name] = body } }
        var all: [String: String] { lock.withLock { bodies } }
    }

    /// A SKAdNetwork postback of `label`'s transaction id (sent in lower case) for `window`.
    static func skan(_ label: String, window: Int) throws -> ByteBuffer {
        var fields = SKANPostbackFields(transactionID: Mint.uuid(label).lowercased())
        fields.adNetworkID = network
        fields.postbackSequenceIndex = window
        fields.sourceIdentifier = window == 0 ? "5239" : "52"
        return ByteBuffer(bytes: try Mint.skan(fields, key: LiveServer.networkKey))
    }

    /// An AdAttributionKit postback of `label` (its identifier in upper case) for the network.
    static func aak(_ label: String, key: ECPrivateKey = LiveServer.networkKey, keyID: String = "network/0") throws -> ByteBuffer {
        try LiveServer.aak(label, { $0.adNetworkID = Self.network }, keyID: keyID, key: key)
    }

    /// A JSON cell as the CSV writes it.
    static func text(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: text
        case .number(let number)?: number
        default: ""
        }
    }

    /// Duplicates in other cases spread over many parts of the list, a quoted cell holding a line break, a byte-order
    /// mark, blank lines and CRLF; claimed SKAdNetwork windows between the windows of an unclaimed identifier, so its
    /// three postbacks lie in three pages of two. Statuses, counts and the order are what a whole reading gives, and
    /// the JSON, CSV and NDJSON answers are byte for byte the whole table rendered at once.
    @Test(arguments: TestEngine.allCases) func smallStepsAnswerWhatAWholeReadingAnswers(engine: TestEngine) async throws {
        var configured = LiveServer(engine: engine)
        configured.settings.reconcileSizes = Self.small
        let server = configured
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "analyst", scopes: [.read]).key
        store.close()
        let forger = try ECPrivateKey.generate()
        // Stored in this order: the postbacks' ids follow it.
        let sent: [(String, ByteBuffer, String, HTTPResponse.Status)] = [
            ("S-2/0", try Self.skan("S-2", window: 0), skanPath, .ok),
            ("A-1", try Self.aak("A-1"), aakPath, .ok),
            ("S-1/0", try Self.skan("S-1", window: 0), skanPath, .ok),
            ("A-2", try Self.aak("A-2"), aakPath, .ok),
            ("S-2/1", try Self.skan("S-2", window: 1), skanPath, .ok),
            ("S-3/0", try Self.skan("S-3", window: 0), skanPath, .ok),
            ("S-1/1", try Self.skan("S-1", window: 1), skanPath, .ok),
            ("S-2/2", try Self.skan("S-2", window: 2), skanPath, .ok),
            ("A-3", try Self.aak("A-3", key: forger), aakPath, .badRequest),
            ("A-4", try Self.aak("A-4", key: forger, keyID: "apple-cas-identifier/7"), aakPath, .ok),
        ]
        let a1 = Mint.uuid("A-1"), s1 = Mint.uuid("S-1"), n1 = Mint.uuid("N-1"), a3 = Mint.uuid("A-3"), a4 = Mint.uuid("A-4")
        let n2 = String(Mint.uuid("N-2").enumerated().map { $0.offset % 3 == 0 ? Character($0.element.lowercased()) : $0.element })
        let list = "\u{FEFF}" + [
            "transaction_id,note", a1.lowercased() + ",first", s1, "", n1, "\"\(a1)\",\"the same, in Apple's case\"",
            a3 + ",\"a note on\ntwo lines\"", "  \(a4.lowercased())\t", s1.lowercased(), n2,
        ].joined(separator: "\r\n") + "\r\n"
        let expected: [[String]] = [
            [a1.lowercased(), "verified", "1"], [s1, "verified", "2"], [n1, "unknown", "0"], [a3, "failed_only", "0"],
            [a4.lowercased(), "unverifiable_only", "1"], [n2, "unknown", "0"],
            [Mint.uuid("S-2").lowercased(), "not_claimed", "3"], [Mint.uuid("A-2"), "not_claimed", "1"], [Mint.uuid("S-3").lowercased(), "not_claimed", "1"],
        ]
        let answers = Answers()
        let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
        let uri = "/v1/reconciliation/postbacks?ad_network=\(Self.network)"
        try await server.run { client in
            for (label, body, path, status) in sent {
                #expect(try await client.execute(uri: path, method: .post, body: body).status == status, "\(label)")
            }
            for format in ReportFormat.allCases where format != .table {
                let response = try await client.execute(uri: uri + "&format=\(format.rawValue)", method: .post, headers: bearer, body: ByteBuffer(string: list))
                #expect(response.status == .ok, "\(format): \(String(buffer: response.body))")
                #expect(response.headers[.contentType] == format.contentType)
                answers.set(format.rawValue, String(buffer: response.body))
            }
        }
        let json = try JSONParser.parse(Array((answers.all["json"] ?? "").utf8)).object
        guard case .array(let rows)? = json?["rows"] else { Issue.record("no rows: \(answers.all["json"] ?? "")"); return }
        let found = rows.map { row in ["identifier", "status", "postbacks"].map { Self.text(row.object?[$0]) } }
        #expect(found == expected)
        let counts = json?["counts"]?.object
        for (status, count) in [("verified", 2), ("unverifiable_only", 1), ("failed_only", 1), ("unknown", 2), ("not_claimed", 3)] {
            #expect(counts?[status]?.wholeNumber == Int64(count), "\(status)")
        }
        // The whole table at once, rendered whole, is what the route answered before: the same bytes.
        let reader = try server.store()
        defer { reader.close() }
        let table = try await reader.reconciliation.reconcile(identifiers: try IdentifierList.read(Array(list.utf8)), adNetwork: Self.network,
                                                              app: nil, from: nil, to: nil)
        for format in ReportFormat.allCases where format != .table {
            #expect(answers.all[format.rawValue] == format.render(table, extra: [IdentifierList.counts(table)]), "\(format)")
        }
    }

    /// A bad line is named by its line however many parts of the list came before it, with the message a whole reading
    /// gives; too many identifiers (duplicates count) or none is a 400, and a list over the upload limit a 413.
    @Test func aBadListIsRefusedAsAWholeReadingRefusesIt() async throws {
        var configured = LiveServer()
        configured.settings.reconcileSizes = PostbackReconciliation.Sizes(listSlice: 5, maximumIdentifiers: 5, lookup: 2, page: 2, answer: 16)
        configured.settings.reconcileUploadLimit = 100_000
        let server = configured
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "analyst", scopes: [.read]).key
        store.close()
        let good = (0..<6).map { Mint.uuid("line-\($0)") }
        let bad: [(list: String, line: Int)] = [
            ("postback_identifier\n\(good[0])\n\(good[1]),\"a note on\nthe next line\"\n\(good[2])\none two\n\(good[3])\n", 6),
            ("postback_identifier\r\n\(good[0])\r\n\u{FEFF}\(good[1])\r\n", 3),
            ("\(good[0])\n\(good[1])\nab\"c\n\(good[2])\n", 3),
            ("\(good[0])\n\"\(good[1])\n\(good[2])\n", 2),
            ("\(good[0])\n\(good[1])\n" + String(repeating: "x", count: 200) + "\n", 3),
            ("\(good[0])\n" + String(repeating: "x", count: 70_000), 2),
            ("\(good[0])\n\"" + String(repeating: "x", count: 70_000), 2),
        ]
        var expected: [String] = []
        for (list, line) in bad {
            do {
                _ = try IdentifierList.read(Array(list.utf8))
                Issue.record("read whole, line \(line) is accepted")
                expected.append("")
            } catch let error as APIError {
                #expect(error.message.hasPrefix("line \(line): "), "\(error.message)")
                expected.append(error.message)
            }
        }
        let messages = expected
        let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
        let uri = "/v1/reconciliation/postbacks?ad_network=\(Self.network)"
        try await server.run { client in
            for ((list, line), message) in zip(bad, messages) {
                let answer = try await client.execute(uri: uri, method: .post, headers: bearer, body: ByteBuffer(string: list))
                #expect(answer.status == .badRequest, "line \(line)")
                #expect(answer.json?["message"]?.string == message, "line \(line)")
            }
            for list in [good.joined(separator: "\n"), String(repeating: good[0] + "\n", count: 6)] {
                let answer = try await client.execute(uri: uri, method: .post, headers: bearer, body: ByteBuffer(string: list))
                #expect(answer.status == .badRequest)
                #expect(answer.json?["message"]?.string == "more than 5 identifiers; send them in parts")
            }
            for list in ["", "postback_identifier\r\n\r\n"] {
                let answer = try await client.execute(uri: uri, method: .post, headers: bearer, body: ByteBuffer(string: list))
                #expect(answer.status == .badRequest)
                #expect(answer.json?["message"]?.string?.hasPrefix("no identifiers") == true)
            }
            let large = String(repeating: good[0] + "\n", count: 100_000 / 37 + 1)
            let refused = try await client.execute(uri: uri, method: .post, headers: bearer, body: ByteBuffer(string: large))
            #expect(refused.status == .contentTooLarge)
            #expect(refused.json?["error"]?.string == "payload_too_large")
        }
    }

    /// A list with no declared length is cut off once more than the limit has arrived.
    @Test func aListOverTheLimitIsRefusedWhileItArrives() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        for index in 0..<10 { continuation.yield(ByteBuffer(string: (0..<10).map { Mint.uuid("part-\(index)-\($0)") + "\n" }.joined())) }
        continuation.finish()
        let request = Request(head: HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/v1/reconciliation/postbacks"),
                              body: .init(asyncSequence: stream))
        do {
            _ = try await IdentifierList.read(request, limit: 1024, sizes: PostbackReconciliation.Sizes())
            Issue.record("3,700 bytes were read under a limit of 1,024")
        } catch let error as APIError {
            #expect(error.status == .contentTooLarge)
            #expect(error.code == "payload_too_large")
        }
    }

    /// A list of more than a million identifiers is refused, duplicates counted.
    @Test func aListOfMoreThanAMillionIsRefused() throws {
        let list = Array(String(repeating: "a\n", count: PostbackReconciliation.maximumIdentifiers + 1).utf8)
        do {
            _ = try IdentifierList.read(list)
            Issue.record("1,000,001 identifiers were read")
        } catch let error as APIError {
            #expect(error.message == "more than 1000000 identifiers; send them in parts")
        }
    }
}
