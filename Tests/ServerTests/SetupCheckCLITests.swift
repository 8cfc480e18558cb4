import Foundation
import Testing
import TestSupport

/// `setup check` as an app's CI runs it: exit codes, and the registered copy domain and networks read from the database.
@Suite struct SetupCheckCLITests {
    static let fixtures = Checkout.root.appendingPathComponent("Tests/AppSetupTests/Fixtures")

    @Test func exitCodesAndTheRegisteredAppsExpectations() async throws {
        let good = Self.fixtures.appendingPathComponent("good.plist").path
        let ok = try await countersign(["setup", "check", good, "--copy-domain", "example.com"])
        #expect(ok.status == 0 && ok.stdout.hasSuffix("good.plist: ok (0 warning(s))\n"), "\(ok.stdout) \(ok.stderr)")
        let wrong = try await countersign(["setup", "check", good, "--copy-domain", "example.org"])
        #expect(wrong.status == 1 && wrong.stdout.contains("points at example.com, but this app's copies are registered for example.org"))
        let unreadable = try await countersign(["setup", "check", Self.fixtures.appendingPathComponent("not-a-plist.txt").path])
        #expect(unreadable.status == 2 && unreadable.stderr.contains("is not an XML or binary property list"))

        let database = Checkout.temporaryDirectory() + "/setup.sqlite"
        let registered = try await countersign(["apps", "set", "1108187390", "--name", "Game", "--copy-domain", "example.com",
                                                "--ad-network", "su67r6k2v3.skadnetwork", "--database", database])
        #expect(registered.status == 0, "\(registered.stderr)")
        let checked = try await countersign(["setup", "check", good, "--app", "1108187390", "--database", database])
        #expect(checked.status == 0)
        #expect(checked.stdout.contains("warning: SKAdNetworkItems: does not list su67r6k2v3.skadnetwork"), "\(checked.stdout)")
        let unknown = try await countersign(["setup", "check", good, "--app", "42", "--database", database])
        #expect(unknown.status == 2 && unknown.stderr.contains("app 42 is not registered"))
    }
}
