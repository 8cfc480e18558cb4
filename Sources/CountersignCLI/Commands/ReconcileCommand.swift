import CountersignServer
import ArgumentParser
import Foundation
import Store

/// `countersign reconcile`: which of the postbacks a network claims Apple signed.
struct ReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Check the postback identifiers a network claims: verified, only unverifiable, only refused, unknown; and what it did not claim.",
        discussion: """
        FILE holds the network's postback identifiers (AdAttributionKit postback-identifier, SKAdNetwork transaction-id), one a \
        line or in the first column of a CSV. With --ad-network, the network's verified postbacks received in --from..--to \
        that the file leaves out are listed too. Each row: identifier, status, postbacks (stored under the identifier), \
        counted (of those, how many count). Statuses (docs/metrics.md):
        \(PostbackReconciliation.Status.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Example: countersign reconcile claimed.csv --ad-network example123.skadnetwork --from 2026-11-01 --to 2026-12-01
        """
    )

    @Argument(help: "The file of identifiers (- for standard input).") var file: String
    @Option(name: .customLong("ad-network"), help: "The network whose claims these are.") var adNetwork: String?
    @Option(help: "Only this app's postbacks count as unclaimed.") var app: String?
    @OptionGroup(title: "Unclaimed postbacks received in") var period: PeriodOptions
    @Option(help: "IANA time zone of --from and --to (default: the --app's registered zone, else UTC).") var tz: String?
    @Option(help: "Which of the network's verified postbacks count as not_claimed: all (default), winning (winning first-window installs and re-engagements, what networks claim) or installs (winning first-window installs).") var unclaimed = PostbackReconciliation.UnclaimedScope.all.rawValue
    @OptionGroup var output: OutputOption
    @OptionGroup var database: DatabaseOption

    func run() async throws {
        let output = try self.output.chosen()
        let store = try database.open()
        defer { store.close() }
        var pairs: [(String, String)] = []
        for (name, value) in [("ad_network", adNetwork), ("app", app), ("tz", tz)] { if let value { pairs.append((name, value)) } }
        pairs += try await period.pairs(tz: tz, app: app, store: store)
        let query: PerformanceQuery
        do { query = try PerformanceQuery.parse(pairs) } catch { throw CLIFailure.usage(error.commandLineDescription) }
        let identifiers: [String]
        do { identifiers = try IdentifierList.read(try SpendCommand.read(file)) } catch let error as APIError {
            throw CLIFailure.usage("\(file): \(error.message)")
        }
        guard let scope = PostbackReconciliation.UnclaimedScope(rawValue: unclaimed) else {
            throw CLIFailure.usage("--unclaimed must be one of \(PostbackReconciliation.UnclaimedScope.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let table = try await store.reconciliation.reconcile(identifiers: identifiers, adNetwork: query.adNetwork, app: query.app, from: query.from, to: query.to,
                                                             unclaimed: scope)
        FileHandle.standardOutput.write(Data(output.render(table, extra: [IdentifierList.counts(table)]).utf8))
    }
}
