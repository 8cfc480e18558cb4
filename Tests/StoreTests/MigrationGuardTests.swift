import Foundation
import JWS
import Testing
@testable import Store
import TestSupport

/// Guards on the two migration sets (issue 46, item 5): a shipped migration's text never changes, and both engines'
/// migrations end at the same layout.
@Suite struct MigrationGuardTests {
    /// The SHA-256 of each shipped migration's text. A new migration adds its line here; a line that no longer matches
    /// means a shipped migration was edited: write a new migration instead, since databases already migrated never run
    /// the edited text.
    static let sqliteChecksums: [(String, String)] = [
        ("v1-receipts-postbacks", "184e0823593512066be4457ba871f35866d596f33147c5e04e1d05a081d4aad7"),
        ("v2-schemas-events-apikeys", "f1f86a31468e7ee74e04e6f38d9704a4068b0957d2fe16c4eca10544234c1e61"),
        ("v3-analyst-views", "4037c208bfa018688d91b33516e6e3e7352385bb42c41b6a6889c4113963414f"),
        ("v4-event-count", "1bda00db9d2a52e0f37ae3917cf75fb3a7b779a8de1ae0fa26a352c4da30a2df"),
        ("v5-conversion-rollup", "071658506cff541427de21e7f0dc65cfe47e57f5b47f5b9e0a8817a48e189f44"),
        ("v6-attribution-records", "0758563aac3f90f548897b88068a7cc6e7475bc1130a8d7ac65643c46ce2bf91"),
        ("v7-adservices-jobs", "cf9389d9c1fef16892c1b6cdb90456f8e0792b579ab16c493dc543a8ecd679aa"),
        ("v8-rollup-folding", "a74fde27d35c2015e24e764030f011246c7f918bc9f1fa48948de2b4a14351a9"),
        ("v9-unverified-copies", "f9226ad32e85235cf05bbd9fcb665d0d76f5999e834c663849ecfd45147f7bff"),
        ("v10-client-reported-iad", "bae72befb1850c8ddd33c7f7f121147ba5d6022c307eb859efd7cdefb3707ff9"),
        ("v11-exact-revenue-by-currency", "108909e39b57ac385d118e46fa0900bd5ac0ec06ba0e8ee9db21add6c0657a7e"),
        ("v12-names", "868c79c4bf7eae8449f1e995576f5b83ca0eff3214e4a48dcb806a1aef0a87a7"),
        ("v13-intake-indexes", "16396949f2e1c7cdbb685b75e07d03b0e022dfa26a8ccf9a1c19871c936f2b4d"),
        ("v14-api-key-scopes", "ab2d4fa3735f64b2e93a3f53b4358d1fd2626dea897ad1dd7f366abb086cd7d2"),
        ("v15-app-registry", "8961d24f641f81af08518e396daa44b8f02082f593b014fd09cfbf2186daa30b"),
        ("v16-forwarding", "59bfa6e105d5e6eebfecaf19006d20c84ea12bb8266cfb82f8c510982cd67cf6"),
        ("v17-forwarding-limits", "6b133df94736ad745ab0e8510347872c4302b301c021026d22652291f633205d"),
        ("v18-analyst-views", "4402eedffe55c0da472fef3e00108f68838424598f8b0f122fc379d587464061"),
        ("v19-spend-claims-rates", "6fc4337701692b2c036ed41ad3aeb3c9b444ddff8ac199979d9105046c4cf26d"),
        ("v20-setup-health", "20bb1f64d8d727e2d5474a79053fbe2fdaf98aebf8a4b620c7b6b4827bd50b29"),
        ("v21-exact-revenue-mid", "3e4d15855ac124d90aab398be80da244c50da11a37dfcb6649723875629fff39"),
        ("v22-schema-catalogue-version", "8faf3b498ac5d27c3feeda1e2e7017810ba007bf901296ebe27848b06e22dcbf"),
        ("v23-spend-staged-imports", "19d869e6415978b9fd8d1ddfb8c1289e8f8e5bdc5d37a6b8157411a1a71dd56e"),
        ("v24-public-schema", "d23a756b2b8bd4df9059487dc7b5f0ee1bdb9e9cf6c2e04fbc09635484d2acca"),
        ("v25-acquisition-revenue", "e4bcfe087012af0876ae389b11f8d162f3ac9fb7dcb4ef904204f2d797b99757"),
        ("v26-delivery-templates", "e759b83d8daec20769a8b5db485a4dfce1843a0d576a87c0f5c343ce44dc0f1d"),
        ("v27-cohorts-local-day", "076e5b604803679047dd73333d12cfad8ff1580bfb5e7f54f6da8c1e8ffbf231"),
        ("v28-advertisers", "b9acb505f12415f6f60e55e76318eea07a817bc828d334d359fc37dcc4c11cd6"),
        ("v29-source-mappings", "7cebd54f20e374fdd219c06156ad5e24d5f49531aa89a3f0b99a6250cefc13d8"),
        ("v30-exchange-rates-view", "423dcb043c3f6ac2394c0c1399f5b8596635a0981a7d073d6136bb11e82d4261"),
        ("v31-alerts", "c046a4a090f7e04d180f413f5e629e72fbeebd64aa1bcc1be4f52c51bb800f13"),
        ("v32-forward-outbox-claimed", "3be25c46c20a59f2752e4fc1889b2d2bb8a34086d05d69b734702cfce2586032"),
    ]
    static let postgresChecksums: [(String, String)] = [
        ("v1-countersign", "8e7ae6a4be2d69347cfdd1435f7af5d62c28e6a7681ddc220a5efed440083778"),
        ("v2-exact-revenue-by-currency", "191fd3e9a78a60535e3b28e59c64aea436c94f361a3a813ec25761b0078ab2bb"),
        ("v3-names", "06fb75ef37085a44d15164ba68ff1a6e65f5c4abf7b467e2d1899af5eba7f322"),
        ("v4-rollup-pending", "df9465ca3592b376c620b19d2bf7f1a810712e0c36f7a8d90602da647d334082"),
        ("v5-intake-indexes", "3028dbd7a5daf4e0abc469aa771f5c70beb16e482d9434ed0c7858b53b72250c"),
        ("v6-api-key-scopes", "2713c24e508b8e7fa33bc6ce481bc1fcdfb767bca4cc9c4079b1770e75ffdac7"),
        ("v7-app-registry", "808b622579f71480e05d80693654a569ef39f42ebb22df80ad8b2d29d24e6420"),
        ("v8-forwarding", "7cd886a4c7a3c375ba54e5c274ea68ac86763739be893f13a254269309a5a5ba"),
        ("v9-schema-catalogue-lock", "89ed47023aaa57dbc32614efd6e8d331b9ef2dce2e5c7b5a2a3a02e25540914f"),
        ("v10-forwarding-limits", "4e0f61a82937a41c78712742b75fe438deade952f92d6dbe6fde2f6da3ade373"),
        ("v11-analyst-views", "ba6b34831114fec7cd7900dcfd73b6121f73be82e8cc1794c0c4846a8d220aae"),
        ("v12-spend-claims-rates", "94e9efa417d5e6bfa140e1f3aaba3463d99326b6a970bf37d3dcc88f86984775"),
        ("v13-setup-health", "3cd4247131ecc68bc4b7faed93a82f49c1b809b515a1639c89ef56f555abac41"),
        ("v14-live-rollup-by-id", "900f21fba3c5cd0034aa96816994814483e05ae630da4ce2a1f7b23b2eae4c6e"),
        ("v15-schema-catalogue-version", "0829fbbce05724423b0f8394fd60dbfd52f31fba538d080123e34bc3e8b4d990"),
        ("v16-rollup-follow-planned-once", "edeeaeecfb34b37f9117a0532b65cccafd19282147a9de04cc3d2d59193656d8"),
        ("v17-ingest-batch-procedure", "6e53345178b9e20c041849705bc02cb76233e8cfc3f85bac9b18947a225799b1"),
        ("v18-spend-staged-imports", "10b25392d574e634ec2f7f2f3cb767826dd2cbe8a3e4963db95e5abf50a50e79"),
        ("v19-public-schema", "5ede7d56240dd078e7555b0cf33fa8f59b1daf852fab5da860c4cf696e037341"),
        ("v20-acquisition-revenue", "9d99d12f5403fc46e184bf8251dd67396802cf46520d55da1f0c358486d66fad"),
        ("v21-delivery-templates", "562664654689a0c550c88d74d4da1c522fd7898e337fc0d109e3c2dcc2fd8934"),
        ("v22-cohorts-local-day", "abaa0339ea9e32ab8d068f72c9ea946e5a3f96e9f899667f89d66a4530467748"),
        ("v23-advertisers", "741bd1160c6ae613bab85e31cf3e01b5ed8e2df35e2478919d801849ba435924"),
        ("v24-source-mappings", "54c50d5a7ad858ed953736dc11358bd8ce2747b536899d3e6e89366a576c333c"),
        ("v25-exchange-rates-view", "71229eb499e2435e78b7f1fd50243a6bb036b64cc47787ed32edae52e4be575e"),
        ("v26-alerts", "d088471eca8bb419049ee2fd1fa0bed2d619076d9b7d2f6cc398ef625b8fd1a1"),
        ("v27-forward-outbox-claimed", "dd4001f57bee7d2dab97513eddb8ec8109c5658c3154441e9b231eda4f41d339"),
        ("v28-forward-outbox-due-order", "181e30e09b8d344456caf10f52ec5ba90d22a557910a8ba87e60002e4ddf9068"),
    ]

    /// Each `registerMigration("name") { ... }` block of SQLiteMigrations.swift, as written.
    static func sqliteMigrationTexts() throws -> [(name: String, text: String)] {
        let source = try String(contentsOf: checkoutRoot.appendingPathComponent("Sources/Store/Migrations/SQLiteMigrations.swift"), encoding: .utf8)
        let marker = "migrator.registerMigration(\""
        var blocks = source.components(separatedBy: marker).dropFirst().map { $0 }
        // The last block ends where the others do, before the indentation of what follows it.
        guard let last = blocks.last, let end = last.range(of: "return migrator") else { throw KeyError("no migrations found") }
        blocks[blocks.count - 1] = String(last[..<end.lowerBound])
        return blocks.map { block in (String(block.prefix { $0 != "\"" }), marker + block) }
    }

    static func checksum(_ text: String) -> String {
        sha256(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test func shippedMigrationsAreFrozen() throws {
        let sqlite = try Self.sqliteMigrationTexts()
        #expect(sqlite.map(\.name) == SQLiteMigrations.migrator.migrations, "every registered SQLite migration is a block of the file")
        #expect(sqlite.map { [$0.name, Self.checksum($0.text)] } == Self.sqliteChecksums.map { [$0.0, $0.1] })
        #expect(PostgresMigrations.all.map { [$0.name, Self.checksum($0.sql)] } == Self.postgresChecksums.map { [$0.0, $0.1] })
    }

    /// The checksum test notices a change of one character in a shipped migration.
    @Test func anEditedMigrationChangesItsChecksum() throws {
        let first = try #require(try Self.sqliteMigrationTexts().first)
        #expect(Self.checksum(first.text) == Self.sqliteChecksums[0].1)
        #expect(Self.checksum(first.text.replacingOccurrences(of: "received_at TEXT NOT NULL", with: "received_at TEXT")) != Self.sqliteChecksums[0].1)
    }

    /// Tables, their columns, and views with their columns, as the database itself describes them.
    static func layout(_ engine: TestEngine) async throws -> [String: [String]] {
        let store = try engine.freshStore()
        defer { store.close() }
        var layout: [String: [String]] = [:]
        switch engine {
        case .sqlite:
            for row in try await store.rows("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'") {
                let type = try row.get(at: 0, as: String.self), name = try row.get(at: 1, as: String.self)
                layout["\(type) \(name)"] = try await store.column("SELECT name FROM pragma_table_info(?) ORDER BY cid", [name], as: String.self)
            }
            for row in try await store.rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") {
                layout["index \(try row.get(at: 0, as: String.self))"] = [try row.get(at: 1, as: String.self)]
            }
        case .postgres:
            for row in try await store.rows("SELECT CASE table_type WHEN 'VIEW' THEN 'view' ELSE 'table' END, table_name FROM information_schema.tables WHERE table_schema = 'public'") {
                let type = try row.get(at: 0, as: String.self), name = try row.get(at: 1, as: String.self)
                layout["\(type) \(name)"] = try await store.column("SELECT column_name::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ? ORDER BY ordinal_position", [name], as: String.self)
            }
            for row in try await store.rows("SELECT i.indexname::text, i.tablename::text FROM pg_indexes i WHERE i.schemaname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)") {
                layout["index \(try row.get(at: 0, as: String.self))"] = [try row.get(at: 1, as: String.self)]
            }
        }
        return layout
    }

    /// The tables one engine has and the other has not, and why.
    static let engineOwnTables: Set<String> = [
        // PostgreSQL keeps its own migration log; GRDB's on SQLite is `grdb_migrations`, left out of the layout.
        "postgres: table countersign_migrations",
        // The rollup's bookkeeping: SQLite's one writer hands out ids in commit order, so a high-water mark says what
        // is folded; PostgreSQL's receivers commit ids out of order, so new rows are listed until folded.
        "sqlite: table rollup_state", "postgres: table rollup_pending",
    ]

    /// Every table and view has the same columns in the same order on both engines, every index the same name on
    /// the same table, beyond the tables listed in ``engineOwnTables``.
    @Test func bothEnginesEndAtTheSameLayout() async throws {
        let sqlite = try await Self.layout(.sqlite)
        let postgres = try await Self.layout(.postgres)
        #expect(sqlite.count > 40, "the layout was read")
        let own = Set(Set(sqlite.keys).subtracting(postgres.keys).map { "sqlite: \($0)" }).union(Set(postgres.keys).subtracting(sqlite.keys).map { "postgres: \($0)" })
        #expect(own == Self.engineOwnTables)
        for name in Set(sqlite.keys).intersection(postgres.keys).sorted() {
            #expect(sqlite[name] == postgres[name], "\(name)")
        }
    }
}
