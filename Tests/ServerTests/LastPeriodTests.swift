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

/// The API's `last` (issue 49, finding 7): the days up to and including today in the report's zone, as the CLI's
/// `--last` counts them, on every route that takes `from` and `to`.
@Suite struct LastPeriodTests {
    /// `offset` days from today in `zone`, computed here with the calendar.
    static func day(_ offset: Int, _ zone: String) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let moment = calendar.date(byAdding: .day, value: offset, to: calendar.startOfDay(for: Date()))!
        let parts = calendar.dateComponents([.year, .month, .day], from: moment)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    @Test func lastIsTheDaysUpToTodayInTheReportsZone() async throws {
        let server = LiveServer()
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "analyst", scopes: [.read]).key
        store.close()
        let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
        try await server.run { client in
            #expect(try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("L-1")).status == .ok)
            func body(_ uri: String, _ method: HTTPRequest.Method = .get) async throws -> (HTTPResponse.Status, String) {
                let answer = try await client.execute(uri: uri, method: method, headers: bearer, body: method == .post ? ByteBuffer(string: "identifier\n") : nil)
                return (answer.status, String(buffer: answer.body))
            }
            for zone in ["UTC", "Pacific/Kiritimati"] {
                let explicit = "from=\(Self.day(-6, zone))&to=\(Self.day(1, zone))&tz=\(zone)"
                for path in ["/v1/reports?by=day&", "/v1/conversions?", "/v1/performance?", "/v1/cohorts?", "/v1/intake?"] {
                    let (status, withLast) = try await body(path + "last=7d&tz=\(zone)")
                    #expect(status == .ok, "\(path) \(withLast)")
                    #expect(withLast == (try await body(path + explicit)).1, "\(path) in \(zone)")
                }
                let reconcile = "/v1/reconciliation/postbacks?ad_network=example.adattributionkit&"
                #expect(try await body(reconcile + "last=1w&tz=\(zone)", .post) == (try await body(reconcile + explicit, .post)))
            }
            for (query, message) in [("last=7d&from=2026-11-01", "last replaces from and to"), ("last=7", "such as 7d, 30d or 4w"), ("last=0d", "such as 7d")] {
                let (status, text) = try await body("/v1/reports?" + query)
                #expect(status == .badRequest && text.contains(message), "\(query): \(text)")
            }
        }
    }
}
