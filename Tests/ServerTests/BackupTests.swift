import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// `countersign backup` while the server writes, and the restore docs/operations.md describes (issue 15, item 5).
@Suite struct BackupTests {
    @Test func aBackupTakenWhileTheServerWritesIsConsistentAndRestoresToTheSameReports() async throws {
        let server = LiveServer()
        let directory = Checkout.temporaryDirectory()
        let during = directory + "/during.sqlite"
        let after = directory + "/after.sqlite"
        try await server.run { client in
            for index in 0..<40 { _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("B-\(index)")) }
            // The built binary copies the file while this server goes on storing postbacks.
            async let writes: Void = {
                for index in 40..<120 { _ = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("B-\(index)")) }
            }()
            let backup = try await countersign(["backup", "--database", server.settings.database, "--to", during])
            try await writes
            #expect(backup.status == 0, "\(backup.stderr)")
            #expect(backup.stdout.contains("\"integrity_check\": \"ok\""))
            let again = try await countersign(["backup", "--database", server.settings.database, "--to", during])
            #expect(again.status == 2)
            #expect(again.stderr.contains("exists; choose a new file name"))
        }
        let copied = try TestStore.open(StoreSettings(location: .sqlite(path: during)))
        let copiedCount = try await copied.scalar("SELECT count(*) FROM postbacks", as: Int.self) ?? 0
        let receipts = try await copied.scalar("SELECT count(*) FROM receipts", as: Int.self) ?? 0
        copied.close()
        // One consistent moment: somewhere between the first 40 and all 120, every row with its receipt.
        #expect((40...120).contains(copiedCount))
        #expect(receipts == copiedCount)

        // Restore as docs/operations.md says: the backup copied to the database's path, and serve started on it.
        #expect(try await countersign(["backup", "--database", server.settings.database, "--to", after]).status == 0)
        let restored = LiveServer()
        try FileManager.default.copyItem(atPath: after, toPath: restored.settings.database)
        let query = try ReportQuery.parse([("by", "day,ad_network,window")])
        let original = try server.store()
        let expected = try await original.reports.report(query).rows
        original.close()
        #expect(!expected.isEmpty)
        try await restored.run { client in
            let store = try restored.store()
            defer { store.close() }
            #expect(try await store.reports.report(query).rows == expected)
            #expect(try await store.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 120)
            // The restored server stores new postbacks and still knows the old ones.
            let old = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("B-7"))
            #expect(old.json?["status"]?.string == "duplicate")
        }
    }

    @Test func aPostgreSQLStoreIsPointedToItsOwnTools() async throws {
        let result = try await countersign(["backup", "--database", try TestEngine.postgres.freshDatabase(), "--to", Checkout.temporaryDirectory() + "/x.sqlite"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("pg_dump"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }
}
