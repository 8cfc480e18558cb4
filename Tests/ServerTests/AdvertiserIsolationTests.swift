import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import Postback
import PostbackMint
import Store
import Testing
import TestSupport
@testable import CountersignServer

/// An advertiser's key sees its own apps only, on every route (issue 48, item 4): every route and method is walked with
/// one advertiser's key on two installations, one where another advertiser (acme) has an app, a schema, names, a
/// registered name, postbacks, spend and a forwarding rule, and one where acme never existed. Every answer must be the
/// same on both, so no count, name or error text tells whether acme exists.
@Suite struct AdvertiserIsolationTests {
    static let acmeApp: AppID = 1_108_187_390
    static let betaApp: AppID = 525_463_029
    static let network = "example.adattributionkit"
    static let acmePostback = Mint.uuid("ACME-1")
    static let betaPostback = Mint.uuid("BETA-1")
    /// The postbacks, made once so both installations store the same bytes (a signature differs at every signing).
    static let betaBody = try! LiveServer.aak("BETA-1") { $0.advertisedItemID = betaApp.number }
    static let acmeBody = try! LiveServer.aak("ACME-1") { $0.advertisedItemID = acmeApp.number }
    /// What only acme's installation holds; none may reach beta's key unless beta's own request named it.
    static let secrets = ["AcmeSecretCampaign", "AcmeSecretApp", "acme-secret-adv", "acme-mmp-secret"]

    /// A request beta's key makes: the route's placeholders filled with acme's things (`theirs`), beta's app with
    /// acme's postback and names (`cross`), or beta's own.
    enum Aim: String, CaseIterable {
        case theirs, cross, own
    }

    static func values(_ aim: Aim) -> [String: String] {
        let app = aim == .theirs ? acmeApp : betaApp
        let identifier = aim == .own ? betaPostback : acmePostback
        return ["{app}": String(app), "{identifier}": identifier, "{network}": network, "{level}": "campaign", "{digits}": "12",
                "{name}": aim == .own ? "beta" : "acme-secret-adv", "{file}": "core.js", "{rule}": aim == .own ? "beta-mmp" : "acme-mmp-secret"]
    }

    /// A body for each route that changes something, so the request reaches the route's own checks.
    static func body(_ route: String) throws -> String? {
        switch route {
        case "PUT /v1/schemas/{app}": String(decoding: try ExampleSchema.document("game"), as: UTF8.self).replacingOccurrences(of: String(acmeApp), with: "{app}")
        case "PUT /v1/names/{app}/{network}/{level}/{digits}", "PUT /v1/ad-networks/{network}": #"{"name": "Hijacked"}"#
        case "PUT /v1/apps/{app}": #"{"name": "Hijacked", "time_zone": "UTC"}"#
        case "PUT /v1/advertisers/{name}": #"{"apps": [{app}]}"#
        case "POST /v1/spend":
            "date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency\n2026-11-20,{app},\(network),12,US,1000,50,20,1,999.00,USD\n"
        case "POST /v1/rates": "date,from,to,rate\n2026-11-20,EUR,USD,2.5\n"
        case "PUT /v1/names/{app}/{network}/mappings": "Start Date,SKCampaignId,Campaign ID,Campaign Name\n2026-01-01,12,X-1,Hijacked\n"
        case "POST /v1/reconciliation/postbacks": "identifier\n{identifier}\n"
        case "POST /v1/forwarding/backfill": #"{"rule": "{rule}", "since": "2026-01-01T00:00:00Z"}"#
        default: nil
        }
    }

    /// Sets up an installation: beta (its app, a postback, a key) always, then acme's things when `withAcme`.
    /// Returns beta's key and an admin key.
    static func installation(_ server: LiveServer, withAcme: Bool) async throws -> (beta: String, admin: String) {
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "network", scopes: [.admin]).key
        try await store.advertisers.set(name: "beta", apps: [betaApp])
        let beta = try await store.apiKeys.create(name: "beta-reports", scopes: [.read, .schemas, .encoder], advertiser: "beta").key
        if withAcme {
            try await store.advertisers.set(name: "acme-secret-adv", apps: [acmeApp])
            _ = try await store.apiKeys.create(name: "acme-reports", scopes: [.read], advertiser: "acme-secret-adv")
        }
        store.close()
        let header: HTTPFields = [.authorization: "Bearer \(admin)"]
        try await server.run { client in
            #expect(try await client.execute(uri: "/v1/apps/\(betaApp)", method: .put, headers: header, body: ByteBuffer(string: #"{"name": "Beta"}"#)).status == .ok)
            #expect(try await client.execute(uri: aakPath, method: .post, body: betaBody).status == .ok)
            guard withAcme else { return }
            #expect(try await client.execute(uri: aakPath, method: .post, body: acmeBody).status == .ok)
            for (uri, method, body) in [
                ("/v1/apps/\(acmeApp)", HTTPRequest.Method.put, #"{"name": "AcmeSecretApp", "time_zone": "Europe/Berlin"}"#),
                ("/v1/schemas/\(acmeApp)", .put, String(decoding: try ExampleSchema.document("game"), as: UTF8.self)),
                ("/v1/names/\(acmeApp)/\(network)/campaign/12", .put, #"{"name": "AcmeSecretCampaign"}"#),
                ("/v1/names/\(acmeApp)/\(network)/mappings", .put, "Start Date,SKCampaignId,Campaign ID,Campaign Name\n2026-01-01,34,ACME-C-9,AcmeSecretCampaign\n"),
                ("/v1/spend", .post, "date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency\n2026-11-20,\(acmeApp),\(network),12,US,1000,50,20,1,120.50,USD\n"),
                ("/v1/forwarding/rules/acme-mmp-secret", .put, #"{"url": "https://mmp.example/acme", "app": \#(acmeApp)}"#),
            ] {
                let answer = try await client.execute(uri: uri, method: method, headers: header, body: ByteBuffer(string: body))
                #expect(answer.status.code < 300, "\(uri): \(String(buffer: answer.body))")
            }
        }
        return (beta, admin)
    }

    /// An answer with what varies from run to run (times, the key's prefix) blanked out.
    static func normalised(_ response: TestResponse) -> String {
        var text = String(buffer: response.body)
        text = text.replacing(/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?/, with: "(time)")
        text = text.replacing(/cs_[A-Za-z0-9_-]{6}/, with: "(key)")
        // Import ids are numbered across the installation (docs/threat-model.md says what their gaps tell).
        text = text.replacing(/"import":\d+/, with: "\"import\":(id)")
        return "\(response.status.code) \(response.headers[.contentType] ?? "") \(text)"
    }

    @Test(arguments: TestEngine.allCases) func anAdvertisersKeyFindsNothingOfAnotherAdvertiserOnAnyRoute(engine: TestEngine) async throws {
        let withAcme = LiveServer(engine: engine)
        let withoutAcme = LiveServer(engine: engine)
        let (betaKey, adminKey) = try await Self.installation(withAcme, withAcme: true)
        let (otherBetaKey, _) = try await Self.installation(withoutAcme, withAcme: false)
        let acmeBefore = try await Self.acmeState(withAcme, admin: adminKey)
        let walked = Answers()
        let routes = RouteScopeTests.table.values.filter { $0 != nil }.count
        try await withAcme.run { full in
            try await withoutAcme.run { bare in
                for (route, scope) in RouteScopeTests.table.sorted(by: { $0.key < $1.key }) where scope != nil {
                    let parts = route.split(separator: " ")
                    let method = HTTPRequest.Method(rawValue: String(parts[0]))!
                    for aim in Aim.allCases {
                        var path = String(parts[1])
                        var body = try Self.body(route)
                        for (name, value) in Self.values(aim) {
                            path = path.replacingOccurrences(of: name, with: value)
                            body = body?.replacingOccurrences(of: name, with: value)
                        }
                        let app = aim == .theirs ? Self.acmeApp : Self.betaApp
                        // A bad date too: what the answer says of it must not tell of acme's registration or zone.
                        for uri in [path, path + "?app=\(app)", path + "?app=\(app)&from=x"] {
                            let seen = try await full.execute(uri: uri, method: method, headers: [.authorization: "Bearer \(betaKey)"],
                                                              body: body.map { ByteBuffer(string: $0) })
                            let bare = try await bare.execute(uri: uri, method: method, headers: [.authorization: "Bearer \(otherBetaKey)"],
                                                              body: body.map { ByteBuffer(string: $0) })
                            let text = Self.normalised(seen)
                            #expect(text == Self.normalised(bare), "\(method) \(uri) (\(aim)) answers differently where acme exists")
                            for secret in Self.secrets where !uri.contains(secret) && !(body ?? "").contains(secret) {
                                #expect(!text.contains(secret), "\(method) \(uri) (\(aim)) shows \(secret)")
                            }
                            if aim == .own { #expect(!text.contains(String(Self.acmeApp)), "\(method) \(uri) shows acme's app") }
                            if seen.status == .ok { walked.append("ok \(aim) \(route)\(uri.contains("?") ? " app=" : "")") }
                            walked.append(uri)
                        }
                    }
                }
            }
        }
        #expect(walked.all.filter { !$0.hasPrefix("ok ") }.count == routes * Aim.allCases.count * 3)
        // Beta's key reached its own data on the routes that read it, and its raw pull holds its postback.
        for route in ["GET /v1/reports", "GET /v1/postbacks", "GET /v1/postbacks/{identifier}", "GET /v1/performance", "GET /v1/conversions/export",
                      "GET /v1/names/{app}", "GET /v1/setup", "POST /v1/reconciliation/postbacks", "PUT /v1/schemas/{app}"] {
            #expect(walked.all.contains("ok own \(route)") || walked.all.contains("ok own \(route) app="), "\(route) refused beta's key its own data")
            #expect(!walked.all.contains("ok theirs \(route) app="), "\(route) answered beta's key about acme's app")
            if route.contains("{app}") { #expect(!walked.all.contains("ok theirs \(route)"), "\(route) answered beta's key about acme's app") }
        }
        // Nothing beta's key sent changed acme's schema, names, registry entry, spend or rules.
        let acmeAfter = try await Self.acmeState(withAcme, admin: adminKey)
        for (before, after) in zip(acmeBefore, acmeAfter) { #expect(after == before) }
    }

    /// What the network's admin key reads of acme's things.
    static func acmeState(_ server: LiveServer, admin: String) async throws -> [String] {
        let answers = Answers()
        try await server.run { client in
            for uri in ["/v1/schemas/\(acmeApp)", "/v1/names/\(acmeApp)", "/v1/names/\(acmeApp)/mappings", "/v1/apps", "/v1/forwarding/rules",
                        "/v1/performance?app=\(acmeApp)&from=2026-11-01&to=2026-11-30", "/v1/advertisers"] {
                let answer = try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(admin)"])
                #expect(answer.status == .ok, "\(uri): \(String(buffer: answer.body))")
                answers.append(String(buffer: answer.body))
            }
        }
        return answers.all
    }

    @Test func theAPISetsAdvertisersAndSaysWhatItRefuses() async throws {
        let server = LiveServer()
        let store = try server.store()
        let admin = try await store.apiKeys.create(name: "network", scopes: [.admin]).key
        store.close()
        try await server.run { client in
            func put(_ name: String, _ body: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/advertisers/\(name)", method: .put, headers: [.authorization: "Bearer \(admin)"], body: ByteBuffer(string: body))
            }
            // 759518.0 is the integer 759518, as JSON Schema counts it.
            let set = try await put("acme", #"{"apps": [1108187390, 759518.0]}"#)
            #expect(set.status == .ok && set.json?["apps"] == .array([.number("759518"), .number("1108187390")]))
            let taken = try await put("beta", #"{"apps": [759518]}"#)
            #expect(taken.status == .conflict && taken.json?["error"]?.string == "advertiser_app_taken")
            let many = try await put("beta", #"{"apps": [\#((1...1001).map(String.init).joined(separator: ","))]}"#)
            #expect(many.status == .badRequest && many.json?["message"]?.string?.contains("at most 1000 apps") == true)
            for body in [#"{"apps": [0]}"#, #"{"apps": [1.5]}"#, #"{"apps": "1"}"#, #"{"apps": [1], "name": "x"}"#] {
                #expect(try await put("beta", body).status == .badRequest, "\(body)")
            }
            #expect(try await put("Bad Name", #"{"apps": []}"#).status == .badRequest)
            let missing = try await client.execute(uri: "/v1/advertisers/nobody", method: .delete, headers: [.authorization: "Bearer \(admin)"])
            #expect(missing.status == .notFound && missing.json?["error"]?.string == "advertiser_not_found")
        }
    }

    @Test(arguments: TestEngine.allCases) func anAdvertisersKeyFollowsItsAppsAndDiesWithIt(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        defer { store.close() }
        try await store.advertisers.set(name: "beta", apps: [Self.betaApp])
        let key = try await store.apiKeys.create(name: "beta-reports", scopes: [.read], advertiser: "beta").key
        #expect(try await store.apiKeys.grant(for: key)?.apps == [Self.betaApp])
        // Its apps are the advertiser's as they are now.
        try await store.advertisers.set(name: "beta", apps: [Self.betaApp, Self.acmeApp])
        #expect(try await store.apiKeys.grant(for: key)?.apps == [Self.betaApp, Self.acmeApp])
        // An app belongs to one advertiser.
        await #expect(throws: AdvertiserRegistry.Refusal.appsTaken(app: Self.acmeApp, advertiser: "beta")) {
            try await store.advertisers.set(name: "acme", apps: [Self.acmeApp])
        }
        // Scopes that span every app are refused; so is an advertiser nobody added.
        await #expect(throws: APIKeyStore.Refusal.scopeSpansEveryApp(.admin)) {
            try await store.apiKeys.create(name: "x", scopes: [.read, .admin], advertiser: "beta")
        }
        await #expect(throws: APIKeyStore.Refusal.unknownAdvertiser("nobody")) {
            try await store.apiKeys.create(name: "x", scopes: [.read], advertiser: "nobody")
        }
        let shown = try #require(try await store.advertisers.named("beta"))
        #expect(shown.apps == [Self.acmeApp, Self.betaApp].sorted())
        #expect(shown.keys.map(\.name) == ["beta-reports"])
        // Removing the advertiser revokes its keys and frees its apps.
        #expect(try await store.advertisers.remove("beta"))
        #expect(try await store.apiKeys.grant(for: key) == nil)
        try await store.advertisers.set(name: "acme", apps: [Self.acmeApp])
        #expect(try await store.advertisers.all().map(\.name) == ["acme"])
    }

    /// Answers collected inside a `@Sendable` test closure.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []

        func append(_ value: String) { lock.withLock { values.append(value) } }
        var all: [String] { lock.withLock { values } }
    }
}

/// The advertiser commands, a key made for an advertiser and the pull, through the CLI.
@Suite struct AdvertiserCLITests {
    @Test func theCLIAddsAdvertisersMakesTheirKeysAndPulls() async throws {
        let database = Checkout.temporaryDirectory() + "/advertisers.sqlite"
        #expect(try await countersign(["advertiser", "set", "acme-games", "--app", "1108187390", "--database", database]).status == 0)
        let key = try await countersign(["apikey", "create", "--name", "acme-reports", "--scope", "read", "--advertiser", "acme-games", "--database", database])
        #expect(key.status == 0)
        let created = try #require(try JSONParser.parse(Array(key.stdout.utf8)).object)
        #expect(created["advertiser"] == .string("acme-games") && created["apps"] == .array([.number("1108187390")]))
        let shown = try await countersign(["advertiser", "show", "acme-games", "--database", database])
        #expect(try JSONParser.parse(Array(shown.stdout.utf8)).object?["keys"]?.serialized.contains("acme-reports") == true)
        // What is refused, each with one line that says what to do.
        let wide = try await countersign(["apikey", "create", "--name", "x", "--scope", "admin", "--advertiser", "acme-games", "--database", database])
        #expect(wide.status == 2 && wide.stderr.contains("use read, schemas or encoder"))
        let taken = try await countersign(["advertiser", "set", "beta", "--app", "1108187390", "--database", database])
        #expect(taken.status == 1 && taken.stderr.contains("belongs to advertiser acme-games"))
        let unknown = try await countersign(["apikey", "create", "--name", "x", "--advertiser", "nobody", "--database", database])
        #expect(unknown.status == 1 && unknown.stderr.contains("countersign advertiser set nobody"))
        let badTemplate = try await countersign(["pull", "--app", "1108187390", "--template", "nope", "--database", database])
        #expect(badTemplate.status == 1 && badTemplate.stderr.contains("forward templates lists them"))
        #expect(try await countersign(["apps", "set", "1108187390", "--name", "Acme", "--database", database]).status == 0)
        let csv = try await countersign(["pull", "--app", "1108187390", "--format", "csv", "--database", database])
        #expect(csv.status == 0 && csv.stdout.hasPrefix("version,ad-network-id,campaign-id,"))
        #expect(try await countersign(["advertiser", "remove", "acme-games", "--database", database]).stdout.contains("revoked its keys"))
    }
}

/// Dated mappings through the API and the CLI (issue 48, item 5).
@Suite struct SourceMappingServerTests {
    static let file = "Start Date,End Date,SKCampaignId,Campaign ID,Campaign Name\n2026-01-01,2026-01-31,12,C-1,Spring\n2026-02-01,,12,C-2,Summer\n"

    @Test func mappingsAreImportedListedAndRefusedWithTheLinesThatOverlap() async throws {
        let server = LiveServer()
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "network", scopes: [.read, .schemas]).key
        store.close()
        let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
        try await server.run { client in
            let uri = "/v1/names/1108187390/example123.skadnetwork/mappings"
            let stored = try await client.execute(uri: uri, method: .put, headers: bearer, body: ByteBuffer(string: Self.file))
            #expect(stored.status == .ok && stored.json?["mappings"] == .number("2"))
            let overlapping = try await client.execute(uri: uri, method: .put, headers: bearer, body: ByteBuffer(string: Self.file + "2026-01-20,,12,C-3,Late\n"))
            #expect(overlapping.status == .badRequest && overlapping.json?["error"]?.string == "invalid_mapping")
            #expect(overlapping.json?["message"]?.string?.contains("line 2") == true && overlapping.json?["message"]?.string?.contains("line 4") == true)
            let listed = try await client.execute(uri: "/v1/names/1108187390/mappings", method: .get, headers: bearer)
            guard case .array(let mappings)? = listed.json?["mappings"] else { Issue.record("no list"); return }
            #expect(mappings.compactMap { $0.object?["campaign_id"]?.string } == ["C-1", "C-2"], "the refused file changed nothing")
            #expect(try await client.execute(uri: "/v1/names/1108187390/mappings?ad_network=", method: .get, headers: bearer).status == .badRequest)
        }
        let database = server.settings.database
        let path = Checkout.temporaryDirectory() + "/mappings.csv"
        try Data((Self.file + "2026-01-20,,12,C-3,Late\n").utf8).write(to: URL(fileURLWithPath: path))
        let refused = try await countersign(["names", "import-mappings", path, "--app", "1108187390", "--ad-network", "example123.skadnetwork", "--database", database])
        #expect(refused.status == 1 && refused.stderr.contains("line 4") && refused.stderr.contains("end the first before it"))
        try Data(Self.file.utf8).write(to: URL(fileURLWithPath: path))
        let imported = try await countersign(["names", "import-mappings", path, "--app", "1108187390", "--ad-network", "example123.skadnetwork", "--database", database])
        #expect(imported.status == 0 && imported.stdout.contains("imported 2 mappings"))
        let table = try await countersign(["names", "mappings", "--app", "1108187390", "--format", "csv", "--database", database])
        #expect(table.stdout.split(whereSeparator: \.isNewline).count == 3 && table.stdout.contains("C-2"), "\(table.stdout)")
    }
}
