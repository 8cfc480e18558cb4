import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import JWS
import Logging
import Prometheus
import PostbackMint
import Store
import CountersignServer

/// A real server on loopback with a fresh database per test, on either engine.
package struct LiveServer {
    package static let networkKey = try! ECPrivateKey.generate()
    package var settings: ServerSettings
    /// The bounds on heavy requests the server runs with (a test may hold permits of its own).
    package var limits = ServerLimits()

    package init(engine: TestEngine = .sqlite, allowDevelopment: Bool = false, bodyLimit: Int = 64 * 1024, busyTimeout: Double = 5) {
        var settings = ServerSettings()
        settings.port = 0
        settings.database = try! engine.freshDatabase()
        // Durability is not what these tests are about; the tests that kill processes start the built binary.
        settings.durability = .normal
        settings.allowDevelopment = allowDevelopment
        settings.bodyLimit = bodyLimit
        settings.busyTimeout = busyTimeout
        self.settings = settings
    }

    package var keyRing: KeyRing {
        try! KeyRingLoader.load(directory: Checkout.keys, mustExist: true, extraKeys: []).adding([
            KeyEntry(keyID: "network/0", key: Self.networkKey.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
        ])
    }

    /// Runs `test` against the application: in-process through its router (`.router`, the default: routing,
    /// validation, scopes and storage, no socket), or on a loopback socket (`.live`) where the connection matters
    /// (peers' addresses, body and time limits enforced by the channel, keep-alive, raw bytes).
    /// `log` receives what the server logs at warning level and above (by default nothing keeps it).
    package func run(_ mode: TestingSetup = .router, log: RecordingLogHandler? = nil,
                     _ test: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        var logger = log.map { handler in Logger(label: "test") { _ in handler } } ?? Logger(label: "test")
        logger.logLevel = .warning
        let store = try TestStore.open(try ServerApplication.storeSettings(settings))
        defer { store.close() }
        let app = try await ServerApplication(settings: settings, store: store, keyRing: keyRing, logger: logger, metrics: PrometheusCollectorRegistry(),
                                              limits: limits).application()
        try await app.test(mode) { client in try await test(client) }
    }

    /// The server's store, opened as another process would.
    package func store() throws -> StoreDatabase {
        try TestStore.open(StoreSettings(location: try DatabaseLocation(settings.database)))
    }

    /// The rows of a query on the server's database, on either engine, read as another process would.
    package func rows(_ sql: String, _ arguments: [any SQLValueConvertible] = []) async throws -> [SQLRow] {
        let store = try store()
        defer { store.close() }
        return try await store.rows(sql, arguments)
    }

    /// The first column of the first row of a query on the server's database.
    package func scalar<T: SQLValueDecodable & Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible] = [], as type: T.Type = T.self) async throws -> T? {
        let store = try store()
        defer { store.close() }
        return try await store.scalar(sql, arguments, as: T.self)
    }

    /// The first column of every row of a query on the server's database.
    package func column<T: SQLValueDecodable & Sendable>(_ sql: String, _ arguments: [any SQLValueConvertible] = [], as type: T.Type = T.self) async throws -> [T] {
        let store = try store()
        defer { store.close() }
        return try await store.column(sql, arguments, as: T.self)
    }

    /// Changes the database behind the server's back, as a failing disk or an operator would, on either engine.
    package func write(_ body: @escaping @Sendable (any SQLSession) throws -> Void) async throws {
        let store = try store()
        defer { store.close() }
        try await store.engine.write(body)
    }

    package static func aak(_ id: String, _ change: (inout AAKPostbackFields) -> Void = { _ in }, keyID: String = "network/0", key: ECPrivateKey = networkKey) throws -> ByteBuffer {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
        change(&fields)
        return ByteBuffer(bytes: try Mint.aak(fields, key: key, keyID: keyID))
    }
}

extension TestResponse {
    package var json: JSONObject? { (try? JSONParser.parse(Array(buffer: body)))?.object }
}

package let aakPath = "/.well-known/appattribution/report-attribution/"
package let skanPath = "/.well-known/skadnetwork/report-attribution/"

extension Array {
    package func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
