import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import PostbackMint
import Store
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// Every answer is bounded (issue 25, items 4 and 5): copies of one postback are kept up to a limit and listed in
/// pages, and forwarding rules have a limit with a clear error.
@Suite struct BoundedAnswerTests {
    static func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    @Test(arguments: TestEngine.allCases) func copiesOfOnePostbackAreKeptUpToALimitAndListedInPages(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "read", scopes: [.read]).key
        store.close()
        let copies = Int(PostbackLedger.copiesKept) + 30
        try await server.run { client in
            #expect(try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("C-1")).status == .ok)
            for index in 0..<copies {
                let answer = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("C-1") { $0.conversionValue = index % 64 })
                #expect(answer.status == .ok)
            }
            let path = "/v1/postbacks/\(Mint.uuid("C-1"))"
            let whole = try await client.execute(uri: path, method: .get, headers: Self.bearer(key))
            let postback = try #require(whole.json?["postbacks"].flatMap { if case .array(let items) = $0 { items.first?.object } else { nil } })
            #expect(postback["copies_total"]?.wholeNumber == PostbackLedger.copiesKept + 1)
            #expect(postback["postback"]?.object?["replays"]?.wholeNumber ?? 0 + (postback["postback"]?.object?["duplicates"]?.wholeNumber ?? 0) == Int64(copies))
            // Pages of 40 copies (each with the stored copy) until the cursor runs out: every kept copy once.
            var seen: [JSONValue] = []
            var after = "0"
            var pages = 0
            while pages < 10 {
                let page = try await client.execute(uri: "\(path)?copies_limit=40&copies_after=\(after)", method: .get, headers: Self.bearer(key))
                let object = try #require(page.json?["postbacks"].flatMap { if case .array(let items) = $0 { items.first?.object } else { nil } })
                guard case .array(let listed)? = object["copies"] else { Issue.record("no copies"); return }
                #expect(listed.count <= 41)
                seen += listed.compactMap(\.object).filter { $0["stored_copy"] != .bool(true) }.compactMap { $0["id"] }
                pages += 1
                guard case .number(let next)? = object["next_copies_after"] else { break }
                after = next
            }
            #expect(pages == 3)
            #expect(seen.count == Int(PostbackLedger.copiesKept))
            #expect(Set(seen.map(\.serialized)).count == seen.count)
            let refused = try await client.execute(uri: "\(path)?copies_limit=5000", method: .get, headers: Self.bearer(key))
            #expect(refused.status == .badRequest)
            #expect(refused.json?["error"]?.string == "bad_parameter")
        }
        #expect(try await server.scalar("SELECT count(*) FROM receipts", as: Int.self) == Int(PostbackLedger.copiesKept) + 1)
    }
}
