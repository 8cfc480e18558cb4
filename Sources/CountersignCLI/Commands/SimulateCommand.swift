import CountersignServer
import ArgumentParser
import ConversionSchema
import AsyncHTTPClient
import Foundation
import JWS
import NIOCore
import NIOHTTP1
import Postback
import PostbackMint
import Store

/// `countersign simulate`: realistic signed postbacks for demos, tests and load.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Generate realistic signed postbacks: send them to a server, write them to a file, or write weeks of history for your apps into a database.",
        discussion: """
        The postbacks are signed with --signing-key (or the key in --key-out, generated there on first use); tell the server to trust it:
          countersign keys generate --out sim
          countersign serve --key countersign-simulator/0=sim/public-key.pem
          countersign simulate --signing-key sim/private-key.pem --count 1000 --url http://127.0.0.1:8080
        --out writes one body per line.

        A trial: --days (and --start) spread installs over a period for your apps (--app, default the apps with a schema)
        and networks; each postback arrives when Apple's timers say (window 0 two to four days after the install, windows
        1 and 2 later, SKAdNetwork 3.0 one to two days), with null, coarse and fine values by crowd-anonymity tier,
        re-engagements, non-winning postbacks, duplicates, replays, forgeries and unverifiable copies. They are written
        straight into --database with their arrival times, verified with the signing key; --claims-out writes the
        networks' claims and spend for `countersign spend import` (the first network claims 10% more than it drove).
        Installs spend what --genre earns by day 2, 7 and 35, sent as the values the app's schema gives that revenue.
          countersign simulate --app 1108187390 --days 30 --database data/trial.sqlite --claims-out data/claims.csv
        """
    )

    @Option(help: "How many requests (with --url or --out).") var count: Int?
    @Option(help: "Base URL of a countersign server; postbacks go to the well-known paths.") var url: String?
    @Option(help: "Write bodies, one per line, to this file instead of sending them.") var out: String?
    @Option(help: "Requests in flight at once with --url.") var concurrency = 8
    @Option(help: "Random seed, so a run can be repeated exactly.") var seed: UInt64 = 1
    @Option(name: .customLong("signing-key"), help: "P-256 private key PEM to sign with.") var signingKey: String?
    @Option(name: .customLong("key-out"), help: "Where the key pair is kept when --signing-key is not given: used again if there, else generated.") var keyOut = "data/simulator-key"
    @Option(help: "The kid AAK postbacks carry; the server must trust it under this id.") var kid = "countersign-simulator/0"
    @Option(name: .customLong("ack-log"), help: "Append the dedup key of every postback answered 200 to this file.") var ackLog: String?
    @Flag(name: .customLong("distinct"), help: "Send only distinct originals: no duplicates or replays (for load tests).") var distinct = false
    @Option(help: "A trial: days of installs to write into --database.") var days: Int?
    @Option(help: "The trial's first day of installs, YYYY-MM-DD (default: --days days ago).") var start: String?
    @Option(name: .customLong("app"), help: "An advertised app's App Store id (repeatable; a trial's default: the apps with a schema; else three example apps).") var apps: [Int64] = []
    @Option(name: .customLong("ad-network"), help: "An ad network buying installs, with the currency it bills in after = (example123.skadnetwork=EUR; repeatable; default example123.skadnetwork and example.adattributionkit).") var adNetworks: [String] = []
    @Option(help: "The campaigns' digits, comma-separated (two digits each).") var campaigns = "10,11,12"
    @Option(name: .customLong("country"), help: "A country installs come from (repeatable; default US, DE, GB, JP).") var countries: [String] = []
    @Option(name: .customLong("installs-per-day"), help: "Installs a day over all apps and networks.") var installsPerDay = 40
    @Option(help: "The currency networks given with --ad-network bill in, unless one names its own.") var currency = "USD"
    @Option(help: "A trial's kind of app, whose revenue curve installs follow: \(TrialGenre.allCases.map(\.rawValue).joined(separator: ", ")) (docs/cli.md#trial-revenue).")
    var genre = TrialGenre.casualGame.rawValue
    @Option(name: .customLong("claims-out"), help: "Write the networks' claims and spend (the generic layout of docs/spend.md) to this file.") var claimsOut: String?
    @OptionGroup var database: DatabaseOption

    /// Whether this run writes a trial into a database rather than sending or writing postbacks.
    var isTrial: Bool { days != nil || start != nil }

    /// An `--ad-network` value: the id, and the currency after `=` when it names one.
    static func network(_ text: String) -> (id: String, currency: String?) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        return (parts[0], parts.count > 1 ? parts[1] : nil)
    }

    func validate() throws {
        if let bad = apps.first(where: { $0 < 1 }) { throw ValidationError("--app: \(bad) is not an App Store id; use a positive integer") }
        if isTrial {
            guard url == nil, out == nil, count == nil else {
                throw ValidationError("a trial (--days, --start) writes history into --database; --url, --out and --count send postbacks now")
            }
            guard let days, (1...400).contains(days) else { throw ValidationError("--days must be 1 to 400") }
            guard (1...100_000).contains(installsPerDay) else { throw ValidationError("--installs-per-day must be 1 to 100000") }
            if let start, Timestamp.parse(start) == nil || start.count != 10 { throw ValidationError("--start must be a date, YYYY-MM-DD") }
            if let bad = adNetworks.first(where: { !isAdNetworkID(Self.network($0).id) }) {
                throw ValidationError("--ad-network: \(bad) is not an ad network id such as example123.skadnetwork, with =EUR after it if it bills in another currency")
            }
            if let bad = adNetworks.compactMap({ Self.network($0).currency }).first(where: { !CurrencyCode.isKnown($0) }) {
                throw ValidationError("--ad-network: \(bad) is not an ISO 4217 code such as EUR")
            }
            if let bad = campaignList.first(where: { $0.count != 2 || !$0.allSatisfy(\.isASCII) || !$0.allSatisfy(\.isNumber) }) {
                throw ValidationError("--campaigns: \(bad) is not two digits; give them as 10,11,12")
            }
            if let bad = countries.first(where: { $0.count != 2 || !$0.allSatisfy({ $0.isASCII && $0.isUppercase }) }) {
                throw ValidationError("--country: \(bad) is not a two-letter country code such as US")
            }
            guard CurrencyCode.isKnown(currency) else { throw ValidationError("--currency must be an ISO 4217 code such as USD") }
            guard TrialGenre(rawValue: genre) != nil else {
                throw ValidationError("--genre must be \(TrialGenre.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return
        }
        guard let count, count > 0 else { throw ValidationError("--count must be positive (or give --days for a trial)") }
        guard (url == nil) != (out == nil) else { throw ValidationError("give exactly one of --url and --out (or --days for a trial)") }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
    }

    private var campaignList: [String] { campaigns.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }

    func run() async throws {
        let key = try loadOrCreateKey()
        if isTrial { return try await trial(key: key) }
        let count = self.count!
        var simulation = Simulation(seed: seed, key: key, keyID: kid, repeats: !distinct, apps: apps)
        if let out {
            guard FileManager.default.createFile(atPath: out, contents: nil), let handle = FileHandle(forWritingAtPath: out) else {
                throw CLIFailure.usage("cannot write \(out)")
            }
            defer { try? handle.close() }
            var chunk = [UInt8]()
            do {
                for _ in 0..<count {
                    chunk += try simulation.next().body
                    chunk.append(0x0A)
                    if chunk.count > 1 << 20 { try handle.write(contentsOf: Data(chunk)); chunk.removeAll(keepingCapacity: true) }
                }
                try handle.write(contentsOf: Data(chunk))
                try handle.synchronize()
            } catch {
                throw CLIFailure.rejected("cannot write \(out): \(AckLog.describe(error)); free space and run it again")
            }
            FileHandle.standardError.write(Data("wrote \(count) postbacks to \(out)\n".utf8))
            return
        }
        try await send(&simulation, to: url!, count: count)
    }

    /// Writes the trial into the database and prints what it wrote.
    private func trial(key: ECPrivateKey) async throws {
        let store = try database.open(create: true)
        defer { store.close() }
        var appIDs = apps
        if appIDs.isEmpty { appIDs = try await store.schemas.revisions().map(\.app.number) }
        guard !appIDs.isEmpty else {
            throw CLIFailure.usage("--app: name your app (its App Store id), or upload its schema first: countersign schema upload FILE")
        }
        let days = self.days ?? 30
        let today = Timestamp.parse(String(Timestamp.format(Date()).prefix(10)))!
        let first = start.flatMap { Timestamp.parse($0) } ?? today.addingTimeInterval(-Double(days) * 86_400)
        let genre = TrialGenre(rawValue: self.genre) ?? .casualGame
        let networks = adNetworks.isEmpty
            ? TrialNetwork.buying(genre, ids: TrialNetwork.defaults.map(\.id), currencies: TrialNetwork.defaults.map(\.currency))
            : zip(TrialNetwork.buying(genre, ids: adNetworks.map { Self.network($0).id }, currencies: [currency]), adNetworks).map { network, text in
                var network = network
                network.currency = Self.network(text).currency ?? currency
                return network
            }
        var plan = TrialPlan(apps: appIDs, start: first, days: days, installsPerDay: installsPerDay, now: Date(), seed: seed, networks: networks,
                             campaigns: campaignList, countries: countries.isEmpty ? ["US", "DE", "GB", "JP"] : countries)
        plan.genre = genre
        for app in appIDs {
            guard let document = try await store.schemas.document(app: AppID(app)),
                  let schema = SchemaReader.check(Array(document.document.utf8)).schema else { continue }
            plan.worth[app] = TrialWriter.worth(schema, at: first)
        }
        let summary = try await TrialWriter(plan: plan, key: key, keyID: kid).write(into: store)
        if let claimsOut {
            do { try Data(summary.ledger.claimsCSV(plan).utf8).write(to: URL(fileURLWithPath: claimsOut)) } catch {
                throw CLIFailure.usage("cannot write \(claimsOut): \(error.localizedDescription)")
            }
        }
        var answer = JSONObject()
        answer.set("apps", .array(appIDs.map { .number(String($0)) }))
        answer.set("ad_networks", .array(networks.map { .string($0.id) }))
        answer.set("first_day", .string(String(Timestamp.format(first).prefix(10))))
        answer.set("days", .number(String(days)))
        answer.set("installs", .number(String(summary.ledger.installs.filter { !$0.reEngagement }.count)))
        answer.set("re_engagements", .number(String(summary.ledger.installs.filter { $0.reEngagement }.count)))
        answer.set("postbacks_arrived", .number(String(summary.ledger.sent.count)))
        for (disposition, count) in summary.dispositions.sorted(by: { $0.key < $1.key }) { answer.set(disposition, .number(String(count))) }
        if let claimsOut { answer.set("claims", .string(claimsOut)) }
        print(JSONValue.object(answer).prettyPrinted)
        // A trial's forged and unverifiable history is older than live traffic's retention: say how to keep it.
        let age = Int((Date().timeIntervalSince(first) / 86_400).rounded(.up)), defaults = ServerSettings()
        if Double(age) > min(defaults.unverifiableRetentionDays, defaults.rejectedRetentionDays) {
            FileHandle.standardError.write(Data(("countersign: serve deletes unverifiable postbacks and rejected bodies after \(Int(defaults.unverifiableRetentionDays)) days, "
                + "which would prune this trial's oldest; to keep them, serve with --unverifiable-retention \(age) --rejected-retention \(age)\n").utf8))
        }
    }

    private func loadOrCreateKey() throws -> ECPrivateKey {
        if let signingKey {
            do { return try ECPrivateKey(pem: String(decoding: try readInput(signingKey), as: UTF8.self)) } catch let error as KeyError {
                throw CLIFailure.usage("\(signingKey): \(error.message)")
            }
        }
        // A key made by an earlier run is used again, so the server that trusts it goes on accepting what is sent.
        let privatePath = keyOut + "/private-key.pem"
        if let text = try? String(contentsOfFile: privatePath, encoding: .utf8) {
            do { return try ECPrivateKey(pem: text) } catch {
                throw CLIFailure.usage("\(privatePath) holds no P-256 private key; remove it, or pass --signing-key or another --key-out")
            }
        }
        let key = try ECPrivateKey.generate()
        try FileManager.default.createDirectory(atPath: keyOut, withIntermediateDirectories: true)
        try Data(key.pem.utf8).write(to: URL(fileURLWithPath: keyOut + "/private-key.pem"))
        try Data(key.publicKey.pem.utf8).write(to: URL(fileURLWithPath: keyOut + "/public-key.pem"))
        FileHandle.standardError.write(Data("generated a signing key; start the server with --key \(kid)=\(keyOut)/public-key.pem\n".utf8))
        return key
    }

    private func send(_ simulation: inout Simulation, to base: String, count: Int) async throws {
        let base = base.hasSuffix("/") ? String(base.dropLast()) : base
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(timeout: .init(connect: .seconds(2), read: .seconds(30)))
        )
        let acks = try ackLog.map { path throws(CLIFailure) in try AckLog(path: path) }
        var tally: [String: Int] = [:]
        let started = Date()
        var postbacks: [SimulatedPostback] = []
        for _ in 0..<count { postbacks.append(try simulation.next()) }
        try await withThrowingTaskGroup(of: (SimulatedPostback, String).self) { group in
            var iterator = postbacks.makeIterator()
            func start(_ postback: SimulatedPostback) {
                group.addTask {
                    let path = postback.family == .aak ? "/.well-known/appattribution/report-attribution/" : "/.well-known/skadnetwork/report-attribution/"
                    var request = HTTPClientRequest(url: base + path)
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(bytes: postback.body))
                    do {
                        let response = try await client.execute(request, timeout: .seconds(10))
                        let answer = try await response.body.collect(upTo: 1 << 16)
                        if response.status == .ok,
                           let status = (try? JSONParser.parse(Array(buffer: answer)))?.object?["status"]?.string {
                            return (postback, status)
                        }
                        return (postback, "http_\(response.status.code)")
                    } catch {
                        return (postback, "connection_error")
                    }
                }
            }
            for _ in 0..<concurrency { if let next = iterator.next() { start(next) } }
            var serverGone = false
            while let (postback, status) = try await group.next() {
                tally[status, default: 0] += 1
                if ["stored", "duplicate", "replay"].contains(status) { acks?.append(postback.dedupKey) }
                // A connection failure means the server is gone: stop starting requests rather than wait out each timeout.
                // A log that cannot be written stops them too: what it would prove is already lost.
                if status == "connection_error" || acks?.failure != nil { serverGone = true }
                if !serverGone, let next = iterator.next() { start(next) }
            }
            var notSent = 0
            while iterator.next() != nil { notSent += 1 }
            if notSent > 0 { tally["not_sent"] = notSent }
        }
        acks?.close()
        try await client.shutdown()
        let seconds = Date().timeIntervalSince(started)
        var summary = JSONObject()
        summary.set("sent", .number(String(count)))
        summary.set("seconds", .number(String(format: "%.3f", seconds)))
        summary.set("per_second", .number(String(format: "%.1f", Double(count) / max(seconds, 0.001))))
        for (status, number) in tally.sorted(by: { $0.key < $1.key }) { summary.set(status, .number(String(number))) }
        if let acks, acks.failure != nil { summary.set("ack_log_unwritten", .number(String(acks.unwritten))) }
        print(JSONValue.object(summary).prettyPrinted)
        if let acks, let failure = acks.failure {
            throw CLIFailure.rejected("--ack-log \(acks.path): \(failure); \(acks.unwritten) acknowledged postbacks are not in it")
        }
    }
}
