import Foundation
import JWS
import PostbackMint
@testable import Store
import Testing
import TestSupport

/// Postback-level reconciliation over the oracle's month of traffic (``PerformanceOracleTests/fixture(_:)``): what
/// each identifier a network claims, or does not claim, gets, against the ledger of what was sent.
extension PerformanceOracleTests {
    /// The network a sent body names, read here from the body itself (SKAdNetwork at the top, AdAttributionKit in the
    /// JWS payload), not through the server's code.
    static func network(of sent: TrialLedger.Sent) throws -> String {
        let outer = try #require(try JSONParser.parse(sent.body).object)
        if let network = outer["ad-network-id"]?.string { return network }
        let jws = try #require(outer["jws-string"]?.string)
        let payload = try #require(Base64.decode(Array(jws.split(separator: ".")[1].utf8), alphabet: .url))
        return try #require(try JSONParser.parse(payload).object?["ad-network-identifier"]?.string)
    }

    /// Postback-level reconciliation (issue 26, item 5): a network's list of identifiers, with ten verified ones left
    /// out and five it made up, each gets the status the ledger of what was sent says, on both engines.
    @Test(arguments: TestEngine.allCases) func everyClaimedIdentifierGetsWhatTheLedgerSays(engine: TestEngine) async throws {
        let (store, ledger) = try await Self.fixture(engine)
        defer { store.close() }
        let network = "example.adattributionkit"
        // What the ledger says of each identifier the network sent: kinds seen, and the windows stored.
        var kinds: [String: Set<TrialLedger.Sent.Kind>] = [:]
        var windows: [String: Set<String>] = [:]
        var order: [String] = []
        for sent in ledger.sent where try Self.network(of: sent) == network {
            let parts = sent.dedupKey.split(separator: ":")
            let identifier = String(parts[1])
            if kinds[identifier] == nil { order.append(identifier) }
            kinds[identifier, default: []].insert(sent.kind)
            if sent.kind != .forged { windows[identifier, default: []].insert(sent.dedupKey) }
        }
        let verified = order.filter { !kinds[$0]!.isDisjoint(with: [.original, .duplicate, .replay, .development]) }
        let left = Array(verified.suffix(10))
        let invented = (0..<5).map { Mint.uuid("invented-\($0)") }
        let claimed = order.filter { !left.contains($0) } + invented
        #expect(kinds.values.contains { $0 == [.forged] } && kinds.values.contains { $0 == [.unverifiable] }, "the trial has forgeries and unverifiable copies")
        // Lower case, as some networks write them: the status does not depend on the case.
        let table = try await store.reconciliation.reconcile(identifiers: claimed.map { $0.lowercased() } + [claimed[0]], adNetwork: network, app: nil, from: nil, to: nil)
        #expect(table.columns == ["identifier", "status", "postbacks", "counted", "conversion_class", "did_win", "windows"])
        #expect(table.rows.count == claimed.count + left.count, "each identifier once, then the unclaimed")
        var statuses: [String: Int] = [:]
        for row in table.rows {
            let identifier = try #require(Self.cell(row[0])), status = try #require(Self.cell(row[1]))
            statuses[status, default: 0] += 1
            let original = order.first { $0.lowercased() == identifier.lowercased() } ?? identifier
            let seen = kinds[original] ?? []
            let expected: String = if left.contains(original), status == "not_claimed" { "not_claimed" }
                else if !seen.isDisjoint(with: [.original, .duplicate, .replay, .development]) { "verified" }
                else if seen.contains(.unverifiable) { "unverifiable_only" }
                else if seen.contains(.forged) { "failed_only" } else { "unknown" }
            #expect(status == expected, "\(identifier)")
            let stored = expected == "failed_only" || expected == "unknown" ? 0 : windows[original]?.count ?? 0
            #expect(Self.cell(row[2]) == String(stored), "\(identifier) \(status)")
        }
        #expect(statuses["not_claimed"] == 10)
        #expect(statuses["unknown"] == 5)
        #expect((statuses["failed_only"] ?? 0) > 0 && (statuses["unverifiable_only"] ?? 0) > 0 && (statuses["verified"] ?? 0) > 100, "\(statuses)")
    }

    /// `not_claimed` can be limited to what networks claim (issue 49, finding 5: of 985 rows, 960 were later windows,
    /// non-winning postbacks and re-engagements): winning first-window postbacks, or installs only. Each row shows the
    /// class, whether it won and the windows stored, recounted here from the raw rows on both engines.
    @Test(arguments: TestEngine.allCases) func notClaimedCanBeWhatNetworksClaim(engine: TestEngine) async throws {
        let (store, _) = try await Self.fixture(engine)
        defer { store.close() }
        let network = "example.adattributionkit"
        var stored: [String: [(didWin: Bool, window: Int, kind: String)]] = [:]
        for row in try await store.rows("SELECT postback_identifier, did_win, conversion_window, conversion_class FROM postbacks WHERE ad_network_id = ? AND outcome = 'verified'", [network]) {
            stored[try row.get(at: 0, as: String.self), default: []].append((try row.get(at: 1, as: Int.self) == 1, try row.get(at: 2, as: Int.self), try row.get(at: 3, as: String.self)))
        }
        let claimed = Array(stored.keys.sorted().enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        var found: [PostbackReconciliation.UnclaimedScope: Int] = [:]
        for scope in PostbackReconciliation.UnclaimedScope.allCases {
            func kept(_ postback: (didWin: Bool, window: Int, kind: String)) -> Bool {
                switch scope {
                case .all: true
                case .winning: postback.didWin && postback.window == 0
                case .installs: postback.didWin && postback.window == 0 && postback.kind == "install"
                }
            }
            let expected = stored.filter { !claimed.contains($0.key) && $0.value.contains(where: kept) }
            let table = try await store.reconciliation.reconcile(identifiers: claimed, adNetwork: network, app: nil, from: nil, to: nil, unclaimed: scope)
            let rows = table.rows.filter { Self.cell($0[1]) == "not_claimed" }
            #expect(Set(rows.compactMap { Self.cell($0[0]) }) == Set(expected.keys), "\(scope)")
            for row in rows {
                let identifier = try #require(Self.cell(row[0]))
                let postbacks = try #require(expected[identifier]).filter(kept)
                #expect(Self.cell(row[4]) == postbacks[0].kind && Self.cell(row[5]) == (postbacks.contains { $0.didWin } ? "1" : "0"))
                #expect(Self.cell(row[6]) == Set(postbacks.map(\.window)).sorted().map(String.init).joined(separator: ","), "\(identifier)")
            }
            found[scope] = rows.count
        }
        #expect(found[.installs]! > 0 && found[.installs]! < found[.winning]! && found[.winning]! < found[.all]!, "\(found)")
    }
}
