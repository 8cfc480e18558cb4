import ArgumentParser
import CountersignServer
import Foundation
import Postback
import Store

/// `countersign signing`: what each ad network really signs, as `GET /v1/networks/signing` answers.
struct SigningCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signing",
        abstract: "What each ad network really signs: protocol versions, winners, windows, tiers, view-through and re-engagements, beside its claims.",
        discussion: """
        Columns (docs/metrics.md):
        \(SigningMix.Column.allCases.map { "  \($0.rawValue): \($0.definition)" }.joined(separator: "\n"))

        Example: countersign signing --days 30 --app 1108187390
        """
    )
    @Option(help: "Only this app.") var app: AppID?
    @Option(help: "The UTC days looked at, today included (1 to 400).") var days = 30
    @OptionGroup var output: OutputOption
    @OptionGroup var database: DatabaseOption

    func run() async throws {
        let output = try self.output.chosen()
        guard (1...400).contains(days) else { throw CLIFailure.usage("--days must be 1 to 400") }
        let store = try database.open()
        defer { store.close() }
        let table = try await store.signingMix.report(app: app, days: days)
        if table.rows.isEmpty, output == .table { FileHandle.standardError.write(Data("no verified postback or claim in the last \(days) days\n".utf8)) }
        print(output.render(table), terminator: "")
    }
}
