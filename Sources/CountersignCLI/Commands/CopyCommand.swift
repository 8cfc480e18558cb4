import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Store

/// `countersign copy`: moves an installation from one database to another (SQLite into PostgreSQL).
struct CopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy every postback, receipt, schema revision, event, API key, job and record into another database, then check.",
        discussion: """
        Copies table by table with the same ids, shows progress on standard error, folds the copied postbacks into the
        target's report rollup, and ends by comparing row counts and report totals. Safe to run again: rows the target
        already has are kept. Stop the receivers writing to the source first (or run it again after they stop).

        Example: countersign copy --from data/countersign.sqlite --to postgres://countersign@db.internal:5432/countersign
        """
    )

    @Option(help: "The database to copy from (an SQLite file or a postgres:// URL).") var from: String
    @Option(help: "The database to copy into (created and migrated if new).") var to: String

    func run() async throws {
        let source = try StoreOpening.open(from)
        let target = try StoreOpening.open(to, create: true)
        let terminal = isatty(STDERR_FILENO) == 1
        // The copy blocks its thread: it runs on the store's pool, not on the cooperative one.
        let summary = try await Blocking.run {
            try StoreCopier(source: source, target: target).copy { table, done, total in
                let line = "\(table): \(done)/\(total)"
                FileHandle.standardError.write(Data((terminal ? "\r\u{1B}[K" + line : line + "\n").utf8))
            }
        }
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
        let differences = try await StoreCopier(source: source, target: target).check()
        var result = JSONObject()
        for table in StoreCopier.tables {
            result.set(table, .object(JSONObject([
                JSONMember(key: "copied", value: .number(String(summary.copied[table] ?? 0))),
                JSONMember(key: "already_there", value: .number(String(summary.alreadyThere[table] ?? 0))),
            ])))
        }
        result.set("check", .string(differences.isEmpty ? "counts and report totals agree" : "differences found"))
        print(JSONValue.object(result).prettyPrinted)
        guard differences.isEmpty else {
            throw CLIFailure.rejected("the databases differ after copying: " + differences.map(\.description).joined(separator: "; ")
                                      + "; make sure nothing else writes to the target, then run copy again")
        }
    }
}
