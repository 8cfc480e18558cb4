import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Store

/// `countersign backup`: an online copy of the SQLite database, safe while `serve` runs.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the SQLite database into a new file while the server keeps running (SQLite's online backup).",
        discussion: """
        The copy is one consistent moment of the database, checked with SQLite's integrity check before it is given its
        name; receivers go on writing meanwhile. To restore: stop countersign serve, move the database and its -wal and
        -shm files aside, copy the backup to the database's path, start serve (docs/operations.md). On PostgreSQL use
        pg_dump or continuous archiving instead.

        Example: countersign backup --database data/countersign.sqlite --to backups/countersign-2026-11-23.sqlite
        """
    )

    @OptionGroup var database: DatabaseOption
    @Option(help: "The new file to write (never overwritten).") var to: String

    func run() async throws {
        let store = try database.open()
        defer { store.close() }
        let terminal = isatty(STDERR_FILENO) == 1
        let summary: StoreBackup.Summary
        do {
            summary = try store.backup.write(to: to) { done, total in
                guard terminal else { return }
                FileHandle.standardError.write(Data("\r\u{1B}[Kpages: \(done)/\(total)".utf8))
            }
        } catch let failure as StoreBackup.Failure {
            throw CLIFailure.usage(failure.description)
        }
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
        print(JSONValue.object(JSONObject([
            JSONMember(key: "backup", value: .string(to)), JSONMember(key: "bytes", value: .number(String(summary.bytes))),
            JSONMember(key: "postbacks", value: .number(String(summary.postbacks))), JSONMember(key: "integrity_check", value: .string("ok")),
        ])).prettyPrinted)
    }
}
