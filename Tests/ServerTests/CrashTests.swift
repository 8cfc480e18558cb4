import Foundation
import Testing
import TestSupport

/// Runs scripts/crash-test: SIGKILL the server mid-traffic several times; every acknowledged postback must be stored once.
@Suite struct CrashTests {
    @Test func everyAcknowledgedPostbackSurvivesSIGKILL() async throws {
        let result = try await runProcess("/bin/bash", [Checkout.root.appendingPathComponent("scripts/crash-test").path, Checkout.binary],
                                    environment: ["ROUNDS": "4", "COUNT": "2500"])
        print(result.stdout)
        let summary = try #require(result.stdout.split(separator: "\n").last { $0.hasPrefix("acknowledged=") })
        var figures: [String: Int] = [:]
        for pair in summary.split(separator: " ") {
            let parts = pair.split(separator: "=")
            figures[String(parts[0])] = Int(parts[1])
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect((figures["acknowledged"] ?? 0) > 100, "the test must acknowledge traffic to mean anything")
        #expect(figures["missing"] == 0)
        #expect(figures["found"] == figures["acknowledged"])
        #expect(figures["stored_more_than_once"] == 0)
        #expect((figures["receipts"] ?? 0) >= (figures["acknowledged_requests"] ?? .max))
    }
}
