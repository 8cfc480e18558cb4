import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Store

/// The engines every store, report and live-server test runs on.
public enum TestEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// A `--database` value for a new database on this engine: a fresh SQLite file (created when first opened), or a
    /// new database on the throw-away PostgreSQL server that `scripts/with-postgres` started (`make test` starts it),
    /// copied from a template migrated once per test process, so it opens already migrated and empty.
    public func freshDatabase() throws -> String {
        switch self {
        case .sqlite:
            return temporaryDirectory() + "/test.sqlite"
        case .postgres:
            return try TestPostgres.createDatabase(on: try TestPostgres.server(), template: try TestPostgres.migratedTemplate.get())
        }
    }

    /// Opens a fresh, migrated store on this engine. SQLite commits without waiting for the disk (`normal`): tests
    /// whose subject is durability open their stores with settings of their own.
    public func freshStore() throws -> StoreDatabase {
        try TestStore.open(StoreSettings(location: try DatabaseLocation(try freshDatabase()), durability: .normal))
    }
}

/// Stores for tests: opened as `serve` opens them, and run (PostgreSQL's pool) until closed or the test process ends.
public enum TestStore {
    /// Opens a store with `settings` (logging to `logger`) and runs it in a task of its own, which ends when the store is closed
    /// (`StoreLifecycleTests`). Running a store cannot fail (``StoreDatabase/run()`` does not throw), so the task has no
    /// error to surface.
    public static func open(_ settings: StoreSettings, logger: Logger = Logger(label: "countersign.store")) throws -> StoreDatabase {
        let store = try StoreDatabase(settings: settings, logger: logger)
        Task { await store.run() }
        return store
    }
}

/// The test PostgreSQL server.
public enum TestPostgres {
    /// Why PostgreSQL tests cannot run.
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String {
            "COUNTERSIGN_TEST_POSTGRES is not set: run the tests with `make test`, or `scripts/with-postgres swift test`"
        }
    }

    /// The server's `postgres` database.
    public static func server() throws -> PostgresLocation {
        guard let url = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES"] else { throw Unavailable() }
        return try PostgresLocation(url: url)
    }

    /// A URL for `location` (tests use a Unix socket and no password).
    public static func url(_ location: PostgresLocation) -> String {
        "postgres://\(location.user)@localhost:\(location.port)/\(location.database)" + (location.socketDirectory.map { "?host=\($0)" } ?? "")
    }

    /// Runs one statement on `location`'s database with a connection of its own.
    public static func run(_ sql: String, on location: PostgresLocation) throws {
        let configuration = PostgresConnection.Configuration(
            unixSocketPath: location.socketPath ?? "", username: location.user, password: nil, database: location.database)
        let connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 1, logger: Logger(label: "test")).wait()
        defer { try? connection.close().wait() }
        _ = try connection.simpleQuery(sql).wait()
    }

    /// Creates a database with a new name on `server` (a copy of `template` when given) and returns its URL.
    public static func createDatabase(on server: PostgresLocation, template: String? = nil) throws -> String {
        let name = "cs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        try run("CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? ""), on: server)
        var database = server
        database.database = String(name)
        return url(database)
    }

    /// A database on the test server migrated to this build's schema and then closed, made once per test process:
    /// `CREATE DATABASE ... TEMPLATE` copies it in a few milliseconds, where running every migration takes hundreds.
    static let migratedTemplate = Result<String, any Error> {
        let url = try createDatabase(on: try TestPostgres.server())
        _ = try StoreDatabase(migrating: url)
        return try PostgresLocation(url: url).database
    }
}

extension StoreDatabase {
    /// Opens the store at `url` (which runs its migrations) and closes it again.
    fileprivate convenience init(migrating url: String) throws {
        try self.init(settings: StoreSettings(location: try DatabaseLocation(url)))
        close()
    }
}

/// A PostgreSQL server of a test's own, for the tests that stop and start the server under load: initdb into a
/// temporary directory (as the `postgres` user when run as root, since PostgreSQL refuses root), a Unix socket there
/// and no TCP port, with PostgreSQL's durable defaults. It is stopped and removed when the value is released.
public final class PostgresCluster: Sendable {
    /// The directory that holds the data directory, the socket and the log.
    public let directory: String
    /// The server's `postgres` database.
    public let server: PostgresLocation
    private let bin: String

    /// Creates and starts the server (the programs come from `COUNTERSIGN_TEST_POSTGRES_BIN`, which
    /// `scripts/with-postgres` sets).
    public init() throws {
        guard let bin = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES_BIN"] else { throw TestPostgres.Unavailable() }
        self.bin = bin
        // Beside the shared server when there is one, so `scripts/with-postgres` stops it too if this process dies.
        if let shared = ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES_DATA"] {
            directory = URL(fileURLWithPath: shared).deletingLastPathComponent().appendingPathComponent("clusters/" + UUID().uuidString.prefix(8)).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } else {
            directory = temporaryDirectory()
        }
        server = try PostgresLocation(url: "postgres://postgres@localhost:5432/postgres?host=\(directory)")
        chmod(directory, 0o755)
        if getuid() == 0 {
            guard try TestPostgres.spawnAndWait(["chown", "postgres", directory]) == 0 else { throw TestPostgres.ControlFailed(arguments: ["chown"], status: 1) }
        }
        try control(["\(bin)/initdb", "-D", directory + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        try start()
    }

    /// Starts the server and waits until it accepts connections.
    public func start() throws {
        try control(["\(bin)/pg_ctl", "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60",
                     "-o", "-k \(directory) -c listen_addresses='' -c max_connections=400 -c shared_buffers=128MB", "start"])
    }

    /// Stops the server (`pg_ctl stop -m fast`) and waits until it is down.
    public func stop() throws {
        try control(["\(bin)/pg_ctl", "-D", directory + "/data", "-m", "fast", "-w", "stop"])
    }

    private func control(_ command: [String]) throws {
        let command = getuid() == 0 ? ["runuser", "-u", "postgres", "--"] + command : command
        let status = try TestPostgres.spawnAndWait(command)
        guard status == 0 else { throw TestPostgres.ControlFailed(arguments: command, status: status) }
    }

    /// Stops the server at once and removes its directory (also done when the value is released).
    public func remove() {
        _ = try? control(["\(bin)/pg_ctl", "-D", directory + "/data", "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { remove() }
}

extension TestPostgres {
    /// Runs a command with only /dev/null as its standard streams and no other descriptor of ours, and waits for it.
    /// Foundation's `Process` would hand the server it starts a descriptor that keeps `waitUntilExit` waiting for as
    /// long as the server lives.
    static func spawnAndWait(_ command: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in Int32(0)...2 {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) } ?? []
        for descriptor in open where descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        var pid: pid_t = 0
        let arguments = (["/usr/bin/env"] + command).map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, arguments, environ)
        guard spawned == 0 else { throw ControlFailed(arguments: command, status: spawned) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (status >> 8) & 0xff
    }

    /// A server program failed.
    public struct ControlFailed: Error {
        public let arguments: [String]
        public let status: Int32
    }
}

/// The checkout's root directory, found from this file, so tests run from any working directory.
public let checkoutRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A new empty temporary directory.
public func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("countersign-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs `writer` as its service group would while `body` submits to it, then shuts it down (commit, fold, end of
/// the thread) before returning.
public func withRunningWriter<T: Sendable>(_ writer: GroupCommitWriter, _ body: () async throws -> T) async throws -> T {
    let running = Task { try await writer.run() }
    let result: Result<T, any Error>
    do { result = .success(try await body()) } catch { result = .failure(error) }
    running.cancel()
    try await running.value
    return try result.get()
}

extension StoreDatabase {
    /// The rows of a query, for tests to look at what was stored.
    public func rows(_ sql: String, _ arguments: [any SQLValueConvertible] = []) async throws -> [SQLRow] {
        try await engine.read { db in try db.rows(sql, arguments) }
    }

    /// The first column of the first row of a query.
    public func scalar<T: SQLValueDecodable & Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible] = [], as type: T.Type = T.self) async throws -> T? {
        try await engine.read { db in try db.value(sql, arguments, as: T.self) }
    }

    /// The first column of every row of a query.
    public func column<T: SQLValueDecodable & Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible] = [], as type: T.Type = T.self) async throws -> [T] {
        try await rows(sql, arguments).map { try $0.get(at: 0, as: T.self) }
    }
}

/// The example conversion schemas in `examples/schemas/`, which tests store as apps' schemas.
public enum ExampleSchema {
    /// The document `examples/schemas/<name>.json`.
    public static func document(_ name: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return Array(try Data(contentsOf: root.appendingPathComponent("examples/schemas/\(name).json")))
    }
}

/// A trigger named `refuse_<table>` that refuses every new row of `table` with `message`, as a full disk or a broken
/// table would, on either engine; and its removal.
public enum RefusingTrigger {
    /// Installs the trigger.
    public static func install(on table: String, message: String, _ db: any SQLSession) throws {
        switch db.dialect {
        case .sqlite:
            try db.execute("CREATE TRIGGER refuse_\(table) BEFORE INSERT ON \(table) BEGIN SELECT RAISE(ABORT, '\(message)'); END")
        case .postgres:
            try db.execute("CREATE FUNCTION refuse_\(table)() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '\(message)'; END $$")
            try db.execute("CREATE TRIGGER refuse_\(table) BEFORE INSERT ON \(table) FOR EACH ROW EXECUTE FUNCTION refuse_\(table)()")
        }
    }

    /// Removes the trigger.
    public static func remove(from table: String, _ db: any SQLSession) throws {
        try db.execute(db.dialect == .sqlite ? "DROP TRIGGER refuse_\(table)" : "DROP TRIGGER refuse_\(table) ON \(table)")
    }
}
