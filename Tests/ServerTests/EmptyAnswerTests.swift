import Foundation
import Testing
import TestSupport

/// An answer that would be empty for a reason the user can fix says so (issue 49, finding 13): a reversed range, an app
/// Countersign does not know, a misspelled dimension. An app that is known but quiet still answers an empty table.
@Suite struct EmptyAnswerTests {
    @Test func aReversedRangeAnUnknownAppAndATypoAreSaidSo() async throws {
        let database = Checkout.temporaryDirectory() + "/empty.sqlite"
        let registered = try await countersign(["apps", "set", "1108187390", "--name", "Game", "--database", database])
        #expect(registered.status == 0, "\(registered.stderr)")
        for command in ["performance", "report"] {
            let reversed = try await countersign([command, "--from", "2026-11-10", "--to", "2026-11-01", "--database", database])
            #expect(reversed.status == 2 && reversed.stderr.contains("--to (2026-11-01) is not after --from (2026-11-10)"), "\(command): \(reversed.stderr)")
            let unknown = try await countersign([command, "--app", "999", "--database", database])
            #expect(unknown.status == 1 && unknown.stderr.contains("app 999 is not registered"), "\(command): \(unknown.stderr)")
            let quiet = try await countersign([command, "--app", "1108187390", "--database", database])
            #expect(quiet.status == 0, "\(command): \(quiet.stderr)")
        }
        let typo = try await countersign(["performance", "--by", "campain", "--database", database])
        #expect(typo.status == 2 && typo.stderr.contains("did you mean campaign?"), "\(typo.stderr)")
    }
}
