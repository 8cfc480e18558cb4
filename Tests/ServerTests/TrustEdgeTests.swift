import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import Postback
import Store
import Prometheus
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// The edges an attacker tried around the signature checks (issue 25, items 5 to 7): control characters, malformed
/// requests, unknown parameters, HEAD, currencies and app ids, forwarding rules and URLs, file permissions, backups.
@Suite struct TrustEdgeTests {
    static func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    /// Text with NUL or another control character, in every public field and in a query, gets the same 400 JSON on
    /// both engines, and nothing is stored.
    @Test(arguments: TestEngine.allCases) func controlCharactersAreRefusedAlikeOnBothEngines(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        store.close()
        try await server.run { client in
            let iad = AppleAdsServerTests.example.replacingOccurrences(of: "org name", with: "org\\u0000name")
            let cases: [(String, HTTPRequest.Method, String?, String, String)] = [
                ("/v1/iad/attribution?app=1108187390", .post, iad, "invalid_iad_dictionary", "control"),
                ("/v1/iad/attribution?app=1108187390", .post, AppleAdsServerTests.example.replacingOccurrences(of: "org name", with: "org\\u0085name"), "invalid_iad_dictionary", "control"),
                ("/v1/iad/attribution?app=1108187390&install_id=a%00b", .post, AppleAdsServerTests.example, "bad_parameter", "control"),
                ("/v1/adservices/tokens", .post, #"{"token": "QUJD", "app": "a\u0000b"}"#, "invalid_token", "control"),
                // Display spoofing: a bidi override or a zero-width space in a name or id people read.
                ("/v1/iad/attribution?app=1108187390", .post, AppleAdsServerTests.example.replacingOccurrences(of: "org name", with: "org\\u202Ename"), "invalid_iad_dictionary", "format"),
                ("/v1/iad/attribution?app=1108187390&install_id=a%E2%80%AEb", .post, AppleAdsServerTests.example, "bad_parameter", "format"),
                ("/v1/adservices/tokens", .post, #"{"token": "QUJD", "install-id": "a\u200Bb"}"#, "invalid_token", "format"),
                ("/v1/forwarding/entries?partner=a%00b", .get, nil, "bad_parameter", "control"),
                ("/v1/reports?tz=UTC%0D%0AX", .get, nil, "bad_parameter", "control"),
                ("/v1/reports?api%5Fkey=x", .get, nil, "bad_parameter", "ASCII"),
                // A parameter given twice: one check must not read the first and the query the last.
                ("/v1/adservices/report?app=111&app=222", .get, nil, "bad_parameter", "twice"),
                ("/v1/forwarding/rules/x?drop_entries=true&drop_entries=false", .delete, nil, "bad_parameter", "twice"),
            ]
            for (uri, method, body, code, words) in cases {
                let answer = try await client.execute(uri: uri, method: method, headers: Self.bearer(admin), body: body.map { ByteBuffer(string: $0) })
                #expect(answer.status == .badRequest, "\(uri)")
                #expect(answer.json?["error"]?.string == code, "\(uri): \(String(buffer: answer.body))")
                #expect(answer.json?["message"]?.string?.contains(words) == true, "\(uri): \(String(buffer: answer.body))")
            }
        }
        #expect(try await server.scalar("SELECT count(*) FROM attribution_records", as: Int.self) == 0)
        #expect(try await server.scalar("SELECT count(*) FROM adservices_jobs", as: Int.self) == 0)
    }

    /// A request the HTTP parser cannot read gets a 400 with the JSON body too.
    @Test func malformedRequestsGetJSONErrors() async throws {
        let server = LiveServer()
        try await server.run(.live) { client in
            let port = try #require(client.port)
            for request in ["GARBAGE\r\n\r\n", "POST /postbacks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"] {
                let connection = try RawConnection(port: port)
                connection.send(request)
                let (text, closed) = await connection.readUntilClosed()
                #expect(closed)
                #expect(text.hasPrefix("HTTP/1.1 400"), "\(text)")
                #expect(text.contains(#"{"error":"malformed_request","message":""#), "\(text)")
            }
            // CONNECT asks for a tunnel: answered 405 at once and closed (SwiftNIO sends no body after CONNECT), never
            // left open until the idle timeout.
            let connect = try RawConnection(port: port, readTimeout: 5)
            connect.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: x\r\n\r\n")
            let (answer, closed) = await connect.readUntilClosed()
            #expect(closed)
            #expect(answer.hasPrefix("HTTP/1.1 405"), "\(answer)")
        }
    }

    /// A client that asks before sending its body (`Expect: 100-continue`, what curl does for any upload over 1 KiB) is
    /// told to go on at once, instead of waiting a second for an answer that never comes.
    @Test func anUploadThatAsksFirstIsToldToContinue() async throws {
        let server = LiveServer()
        let body = String(buffer: try LiveServer.aak("E-1"))
        try await server.run(.live) { client in
            let port = try #require(client.port)
            let connection = try RawConnection(port: port, readTimeout: 10)
            connection.send("POST /postbacks HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n")
            let interim = await connection.read(until: "\r\n\r\n")
            #expect(interim.hasPrefix("HTTP/1.1 100 Continue\r\n"), "\(interim)")
            connection.send(body)
            let (answer, _) = await connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        }
        #expect(try await server.scalar("SELECT count(*) FROM postbacks", as: Int.self) == 1)
    }

    /// Every route refuses a parameter it does not take (the postback routes and dashboard files read no query), and
    /// HEAD is answered wherever GET is.
    @Test func everyRouteRefusesUnknownParametersAndHEADIsAnswered() async throws {
        let database = try TestEngine.sqlite.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        store.close()
        let server = try await RouteScopeTests.application(database: database)
        let routes = server.routes.map { (path: $0.path.description, method: $0.method) }
        try await server.application().test(.router) { client in
            for route in routes {
                let template = route.path
                if template.hasPrefix("/.well-known") || template == "/postbacks" || template.hasPrefix("/dashboard") { continue }
                var path = template
                for (name, value) in RouteScopeTests.parameterValues { path = path.replacingOccurrences(of: name, with: value) }
                let answer = try await client.execute(uri: path + "?zzz=1", method: route.method, headers: Self.bearer(admin))
                #expect(answer.status == .badRequest, "\(route.method) \(template)?zzz=1 answered \(answer.status)")
                #expect(answer.json?["error"]?.string == "bad_parameter", "\(route.method) \(template)")
            }
            let head = try await client.execute(uri: "/healthz", method: .head)
            #expect(head.status == .ok)
            let reports = try await client.execute(uri: "/v1/reports", method: .head, headers: Self.bearer(admin))
            #expect(reports.status == .ok)
            #expect(reports.body.readableBytes == 0)
        }
    }

    /// Made-up currencies and app id 0 are refused wherever they are named.
    @Test func madeUpCurrenciesAndAppZeroAreRefused() async throws {
        let database = try TestEngine.sqlite.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        store.close()
        let server = try await RouteScopeTests.application(database: database)
        try await server.application().test(.router) { client in
            let zzz = try await client.execute(uri: "/v1/apps/1108187390", method: .put, headers: Self.bearer(admin),
                                               body: ByteBuffer(string: #"{"name": "Game", "currency": "ZZZ"}"#))
            #expect(zzz.status == .badRequest)
            #expect(zzz.json?["message"]?.string?.hasPrefix("currency:") == true)
            for uri in ["/v1/apps/0", "/v1/names/0", "/v1/schemas/0", "/v1/schemas/%D9%A1%D9%A2"] {
                let method: HTTPRequest.Method = uri.hasPrefix("/v1/apps") ? .put : .get
                let answer = try await client.execute(uri: uri, method: method, headers: Self.bearer(admin), body: ByteBuffer(string: #"{"name": "Game"}"#))
                #expect(answer.status == .badRequest, "\(uri)")
                #expect(answer.json?["error"]?.string == "bad_app", "\(uri): \(String(buffer: answer.body))")
            }
            for query in ["app=0", "currency=ZZZ"] {
                let answer = try await client.execute(uri: "/v1/reports?\(query)", method: .get, headers: Self.bearer(admin))
                #expect(answer.status == .badRequest, "\(query)")
            }
            var game = try #require(try JSONParser.parse(try ExampleSchema.document("game")).object)
            game.set("currency", .string("ZZZ"))
            let schema = try await client.execute(uri: "/v1/schemas/1108187390", method: .put, headers: Self.bearer(admin),
                                                  body: ByteBuffer(string: JSONValue.object(game).serialized))
            #expect(schema.status == .unprocessableContent)
            #expect(String(buffer: schema.body).contains("ISO 4217"))
        }
    }

    /// Forwarding URLs are one printable line with a real port; a key cannot add rules past the limit.
    @Test(arguments: TestEngine.allCases) func forwardingRulesAndURLsAreBounded(engine: TestEngine) async throws {
        for url in ["http://a.example/\r\nX: y", "http://a.example/ x", "http://a.example/\u{0}", "http://a.example:99999/", "http://a.example:0/",
                    "http://user:pw@a.example/", "ftp://a.example/", "http://a.example:/", "http://127.0.0.1%00:19050/nul",
                    "http://a.example%0d%0aX-Injected.example/", "http://a.example:080/", "http://a_b.example/"] {
            #expect(throws: ForwardRule.Problem.self, "\(url.debugDescription)") { try ForwardRule.check(ForwardRule(name: "x", url: url)) }
        }
        for url in ["https://a.example/postbacks", "http://127.0.0.1:8080/p?x=1", "http://[::1]:9000/p"] {
            #expect(throws: Never.self, "\(url)") { try ForwardRule.check(ForwardRule(name: "x", url: url)) }
        }
        let database = try engine.freshDatabase()
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let admin = try await store.apiKeys.create(name: "admin", scopes: [.admin]).key
        store.close()
        var settings = ServerSettings()
        settings.database = database
        settings.forwardMaxRules = 2
        let running = try TestStore.open(try ServerApplication.storeSettings(settings))
        defer { running.close() }
        let server = try await ServerApplication(settings: settings, store: running, keyRing: LiveServer().keyRing, logger: .init(label: "test"),
                                                    metrics: PrometheusCollectorRegistry())
        try await server.application().test(.router) { client in
            for (index, expected) in [HTTPResponse.Status.ok, .ok, .conflict].enumerated() {
                let answer = try await client.execute(uri: "/v1/forwarding/rules/p\(index)", method: .put, headers: Self.bearer(admin),
                                                      body: ByteBuffer(string: #"{"url": "https://p.example/\#(index)"}"#))
                #expect(answer.status == expected)
                if expected == .conflict { #expect(answer.json?["error"]?.string == "forward_rule_limit") }
            }
            let crlf = try await client.execute(uri: "/v1/forwarding/rules/p0", method: .put, headers: Self.bearer(admin),
                                                body: ByteBuffer(string: #"{"url": "https://p.example/\r\nX: y"}"#))
            #expect(crlf.status == .badRequest)
        }
    }

    /// The database, its WAL, backups and generated keys are the owner's alone (0600, directories 0700) unless
    /// COUNTERSIGN_UMASK says otherwise; a backup onto a symbolic link that points nowhere is refused in one line.
    @Test func filesAreTheOwnersAloneAndBackupsNeverFollowALink() async throws {
        let directory = Checkout.temporaryDirectory()
        let database = directory + "/data/db.sqlite"
        #expect(try await countersign(["apikey", "create", "--name", "x", "--database", database]).status == 0)
        func mode(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1 }
        #expect(try mode(database) == 0o600)
        #expect(try mode(directory + "/data") == 0o700)
        let backup = try await countersign(["backup", "--database", database, "--to", directory + "/backup.sqlite"])
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(try mode(directory + "/backup.sqlite") == 0o600)
        let keys = try await countersign(["keys", "generate", "--out", directory + "/keys"])
        #expect(keys.status == 0, "\(keys.stderr)")
        #expect(try mode(directory + "/keys/private-key.pem") == 0o600)
        // The operator may choose otherwise.
        let shared = directory + "/shared.sqlite"
        #expect(try await countersign(["apikey", "create", "--name", "x", "--database", shared], environment: ["COUNTERSIGN_UMASK": "027"]).status == 0)
        #expect(try mode(shared) == 0o640)
        let bad = try await countersign(["apikey", "list", "--database", shared], environment: ["COUNTERSIGN_UMASK": "99"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("COUNTERSIGN_UMASK"))
        // A dangling symbolic link is something at the path: refused, in one line, and nothing written through it.
        let link = directory + "/dangling.sqlite"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory + "/nowhere/target.sqlite")
        let refused = try await countersign(["backup", "--database", database, "--to", link])
        #expect(refused.status == 2)
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(refused.stderr.contains("exists; choose a new file name"), "\(refused.stderr)")
        // A .partial file left by an earlier backup is never silently replaced.
        #expect(FileManager.default.createFile(atPath: directory + "/again.sqlite.partial", contents: Data("keep".utf8)))
        let partial = try await countersign(["backup", "--database", database, "--to", directory + "/again.sqlite"])
        #expect(partial.status == 2)
        #expect(partial.stderr.contains("again.sqlite.partial exists"), "\(partial.stderr)")
        #expect(FileManager.default.contents(atPath: directory + "/again.sqlite.partial") == Data("keep".utf8))
        let missing = try await countersign(["backup", "--database", database, "--to", directory + "/no/such/dir/b.sqlite"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot write"), "\(missing.stderr)")
    }
}
