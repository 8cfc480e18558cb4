import Foundation
import Synchronization
import JWS
import Postback
import PostbackMint
import ConversionSchema
import Store

// Measures the verification path on one thread: bytes in, VerificationResult out.
// Usage: countersign-bench verify [SECONDS]; prints `aak_per_s=N skan_per_s=N raw_verify_per_s=N evp_verify_per_s=N
// interleaved_aak_over_evp=R`.

func measure(seconds: Double, _ body: () -> Bool) -> Double {
    var done = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let limit = UInt64(seconds * 1e9)
    var elapsed: UInt64 = 0
    while elapsed < limit {
        for _ in 0..<256 { precondition(body(), "a benchmark input failed to verify") }
        done += 256
        elapsed = DispatchTime.now().uptimeNanoseconds - start
    }
    return Double(done) / (Double(elapsed) / 1e9)
}

let arguments = CommandLine.arguments

/// Opens the store at `text`. A PostgreSQL store's pool runs in a task of its own until the benchmark exits; an SQLite
/// store needs nothing running (and the instruction counts, under valgrind, must not start Swift's concurrency runtime).
func openStore(_ text: String) throws -> StoreDatabase {
    let location = try DatabaseLocation(text)
    let store = try StoreDatabase(settings: StoreSettings(location: location))
    if case .postgres = location { Task.detached { await store.run() } }
    return store
}

guard arguments.count >= 2, ["verify", "count", "threads", "bulk", "store", "roundtrip", "rate", "fsync", "sink"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: countersign-bench verify [SECONDS] | count aak|skan|bare ITERATIONS | threads N | bulk DATABASE ROWS | store DATABASE POSTBACKS [BATCH] | count store|prepare BATCHES SCHEMA | count decode ITERATIONS SCHEMA | roundtrip DATABASE | rate URL FILE PER_SECOND SECONDS [FIRST_LINE] [CONNECTIONS] | fsync DIRECTORY SECONDS | sink\n".utf8))
    exit(2)
}

if arguments[1] == "sink" {
    // A partner that answers every request 200 (PartnerSink), for scripts/bench-forward; prints its port.
    try PartnerSink().run()
    exit(0)
}

if arguments[1] == "rate" {
    // A fixed-rate load (FixedRateLoad): bodies from FILE (one a line, from FIRST_LINE) to URL/postbacks, PER_SECOND a
    // second for SECONDS; prints `rate=... sent=... ok=... other=... server_errors=... failed=... seconds=... p50_ms=... p90_ms=... p99_ms=...
    // p999_ms=... max_ms=... cpu_busy=...%`, latency from each request's intended send time and how busy the machine's
    // cores were while it ran (every process), and on standard error the slowest latency of the requests due in each
    // wall-clock second (`slowest_ms_by_second=HH:MM:SS:...`, the first second's UTC time).
    guard arguments.count >= 6, let rate = Double(arguments[4]), rate > 0, let seconds = Double(arguments[5]), seconds > 0 else {
        FileHandle.standardError.write(Data("usage: countersign-bench rate URL FILE PER_SECOND SECONDS [FIRST_LINE] [CONNECTIONS]\n".utf8))
        exit(2)
    }
    let first = arguments.count > 6 ? Int(arguments[6]) ?? 0 : 0
    let connections = arguments.count > 7 ? Int(arguments[7]) ?? 64 : 64
    guard let text = try? String(contentsOfFile: arguments[3], encoding: .utf8) else {
        FileHandle.standardError.write(Data("cannot read \(arguments[3])\n".utf8))
        exit(2)
    }
    let bodies = text.split(separator: "\n").dropFirst(first).prefix(Int(rate * seconds)).map { Array($0.utf8) }
    let outcome = try FixedRateLoad(url: arguments[2], bodies: bodies, rate: rate, seconds: seconds, connections: connections).run()
    func milliseconds(_ percentile: Double) -> String { String(format: "%.2f", Double(outcome.latency.valueAtPercentile(percentile)) / 1000) }
    print("rate=\(Int(rate)) sent=\(outcome.sent) ok=\(outcome.ok) other=\(outcome.other) server_errors=\(outcome.serverErrors) failed=\(outcome.failed) seconds=\(String(format: "%.3f", outcome.seconds)) p50_ms=\(milliseconds(50)) "
        + "p90_ms=\(milliseconds(90)) p99_ms=\(milliseconds(99)) p999_ms=\(milliseconds(99.9)) max_ms=\(String(format: "%.2f", Double(outcome.latency.max) / 1000))"
        + (outcome.cpuBusy.map { String(format: " cpu_busy=%.0f%%", $0 * 100) } ?? ""))
    FileHandle.standardError.write(Data("slowest_ms_by_second=\(outcome.slowestBySecond)\n".utf8))
    exit(0)
}

if arguments[1] == "fsync" {
    // The disk's latency next to a benchmark (FsyncProbe): a 4 KiB overwrite and its fdatasync due every 20 ms in
    // DIRECTORY for SECONDS; prints `fsync_p50_ms=... fsync_p99_ms=... fsync_max_ms=... flushes=...`, and on standard
    // error the slowest flush of each wall-clock second (`fsync_slowest_ms_by_second=HH:MM:SS:...`).
    guard arguments.count >= 4, let seconds = Double(arguments[3]), seconds > 0 else {
        FileHandle.standardError.write(Data("usage: countersign-bench fsync DIRECTORY SECONDS\n".utf8))
        exit(2)
    }
    let outcome = try FsyncProbe(directory: arguments[2], seconds: seconds, interval: 0.02).run()
    func milliseconds(_ value: UInt64) -> String { String(format: "%.2f", Double(value) / 1000) }
    print("fsync_p50_ms=\(milliseconds(outcome.latency.valueAtPercentile(50))) fsync_p99_ms=\(milliseconds(outcome.latency.valueAtPercentile(99))) "
        + "fsync_max_ms=\(milliseconds(outcome.latency.max)) flushes=\(outcome.latency.totalCount)")
    FileHandle.standardError.write(Data("fsync_slowest_ms_by_second=\(outcome.slowestBySecond)\n".utf8))
    exit(0)
}

if arguments[1] == "bulk" {
    // The direct bulk path for report benchmarks: synthetic counted postbacks written by SQL, 60 days of traffic,
    // spread over 3 apps, 2 networks, 12 campaigns, 3 windows, both classes and protocols. Signing 10 million
    // postbacks would take hours; reports read only these columns, so the bodies are left out (receipt_id 0). Postback
    // identifiers are bulk-<i>, deduplicated as Apple's would be (aak:<id>, skan:<id>:<window>).
    let path = arguments[2]
    let rows = Int(arguments[3]) ?? 10_000_000
    let store = try openStore(path)
    let chunk = 1_000_000
    let started = DispatchTime.now().uptimeNanoseconds
    for start in stride(from: 0, to: rows, by: chunk) {
        let end = min(start + chunk, rows)
        _ = try store.engine.transaction { db in
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
                INSERT INTO postbacks (dedup_key, protocol, version, outcome, key_id, environment, countable, received_at,
                    postback_identifier, ad_network_id, source_identifier, advertised_item_id, conversion_type, redownload, did_win,
                    conversion_window, conversion_value, coarse_value, country_code, source_digits, digit_count, conversion_class,
                    interaction, tier_min, tier_max, signed_json, unsigned_json, receipt_id, route, content_hash, revenue_min, revenue_max, currency)
                SELECT CASE WHEN i % 5 < 3 THEN 'aak:bulk-' || i ELSE 'skan:bulk-' || i || ':' || (i % 3) END, CASE WHEN i % 5 < 3 THEN 'aak' ELSE 'skan' END, CASE WHEN i % 5 < 3 THEN NULL ELSE '4.0' END,
                    'verified', 'bench/0', 'production', 1,
                    strftime('%Y-%m-%dT%H:%M:%fZ', '2026-09-23', '+' || (i * 5184000 / ?) || ' seconds'),
                    'bulk-' || i, CASE WHEN i % 2 = 0 THEN 'example.adattributionkit' ELSE 'example.skadnetwork' END,
                    CAST(10 + i % 12 AS TEXT) || CAST(1 + i % 3 AS TEXT) || CAST(1 + i % 4 AS TEXT),
                    CASE i % 3 WHEN 0 THEN 1108187390 WHEN 1 THEN 525463029 ELSE 10738027756 END,
                    CASE WHEN i % 7 = 0 THEN 're-engagement' WHEN i % 7 = 1 THEN 'redownload' ELSE 'download' END, NULL, i % 9 <> 0,
                    i % 3, CASE WHEN i % 3 = 0 THEN i % 64 END, CASE WHEN i % 3 > 0 THEN 'medium' END, NULL,
                    CAST(10 + i % 12 AS TEXT) || CAST(1 + i % 3 AS TEXT) || CAST(1 + i % 4 AS TEXT), 4,
                    CASE WHEN i % 7 = 0 THEN 're-engagement' ELSE 'install' END, CASE WHEN i % 2 = 0 THEN 'click' ELSE 'view' END,
                    2, 3, '{}', '{}', 0, 'any', x'00', (i % 50) * 1.0, (i % 50) * 1.0 + 5, 'USD'
                FROM n
                """, [start, end, rows])
        }
        try store.rollup.fold()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        FileHandle.standardError.write(Data(String(format: "bulk: %d rows in %.1f s\n", end, seconds).utf8))
    }
    exit(0)
}
let seconds = arguments[1] == "verify" && arguments.count > 2 ? Double(arguments[2]) ?? 5 : 5
let key = try ECPrivateKey.generate()
let ring = try KeyRing([KeyEntry(keyID: "bench/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "bench")])
let verifier = PostbackVerifier(keyRing: ring)

// Distinct, realistic postbacks from the simulator, so nothing is cached between iterations.
var simulation = Simulation(seed: 42, key: key, keyID: "bench/0")
var aakBodies: [[UInt8]] = []
var skanBodies: [[UInt8]] = []
while aakBodies.count < 1000 || skanBodies.count < 1000 {
    let postback = try simulation.next()
    guard postback.kind == .original else { continue }
    if postback.family == .aak, aakBodies.count < 1000 { aakBodies.append(postback.body) }
    if postback.family == .skan, skanBodies.count < 1000, let object = try JSONParser.parse(postback.body).object, object["version"]?.string == "4.0" {
        skanBodies.append(postback.body)
    }
}
var index = 0
if arguments[1] == "roundtrip" {
    // One statement's round trip on the engine at `arguments[2]`, inside a transaction. Prints `roundtrip_us=N`.
    let store = try openStore(arguments[2])
    let rounds = 2000
    let started = DispatchTime.now().uptimeNanoseconds
    try store.engine.transaction { db in for _ in 0..<rounds { _ = try db.value("SELECT 1", as: Int.self) } }
    let single = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e3 / Double(rounds)
    print(String(format: "roundtrip_us=%.1f", single))
    exit(0)
}

if arguments[1] == "store" {
    // The storage path alone, on one thread: verified intakes prepared first, then committed in batches as the group
    // commit does under load. Prints `store_us_per_postback=N`.
    let path = arguments[2]
    let count = Int(arguments[3]) ?? 20_000
    let batchSize = arguments.count > 4 ? Int(arguments[4]) ?? 6 : 6
    var distinct = Simulation(seed: 7, key: key, keyID: "bench/0", repeats: false)
    var intakes: [Intake] = []
    while intakes.count < count {
        let postback = try distinct.next()
        let result = verifier.verify(postback.body, expecting: nil)
        let decision = TrustPolicy(allowDevelopment: false, acceptedAdNetworks: []).decide(result)
        intakes.append(Intake(receivedAt: Date(), remoteAddress: "127.0.0.1", route: .any, body: postback.body, result: result, decision: decision))
    }
    let store = try openStore(path)
    let started = DispatchTime.now().uptimeNanoseconds
    for start in stride(from: 0, to: intakes.count, by: batchSize) {
        _ = try store.ledger.persist(Array(intakes[start..<min(start + batchSize, intakes.count)]))
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    print(String(format: "postbacks=%d batch=%d store_us_per_postback=%.1f", count, batchSize, seconds * 1e6 / Double(count)))
    exit(0)
}
if arguments[1] == "threads" {
    // Whole-path AAK verification on N threads at once, sharing one key ring, as the server does.
    let threads = Int(arguments[2]) ?? 2
    let bodies = aakBodies
    let counts = Mutex<[Int]>([])
    let start = DispatchTime.now().uptimeNanoseconds
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        var done = 0
        var position = thread * 97
        let deadline = start + 3_000_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            for _ in 0..<64 {
                position = (position + 1) % bodies.count
                if case .verified = verifier.verify(bodies[position], expecting: .aak) { done += 1 }
            }
        }
        counts.withLock { $0.append(done) }
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    print(String(format: "threads=%d aak_per_s=%.0f", threads, Double(counts.withLock { $0.reduce(0, +) }) / seconds))
    exit(0)
}
if arguments[1] == "count", ["store", "prepare"].contains(arguments[2]) {
    // A stored batch for instruction counting: ITERATIONS batches of 256 distinct verified postbacks (AAK and
    // SKAdNetwork 4.0) persisted into a fresh SQLite file with the game's schema uploaded (each decoded in the commit).
    // `prepare` does the same but persists nothing; the difference of the two runs is what storing costs.
    let iterations = min(Int(arguments[3]) ?? 1, 7)
    let bodies = zip(aakBodies, skanBodies).flatMap { [$0, $1] }
    let batches = (0..<iterations).map { batch in
        bodies[(batch * 256)..<((batch + 1) * 256)].map { body in
            let result = verifier.verify(body, expecting: nil)
            return Intake(receivedAt: Date(), remoteAddress: "127.0.0.1", route: .any, body: body, result: result,
                          decision: TrustPolicy(allowDevelopment: false, acceptedAdNetworks: []).decide(result))
        }
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("countersign-count-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try openStore(directory + "/count.sqlite")
    // Stored with SQL rather than the async upload: valgrind cannot run Swift's concurrency runtime here.
    let document = try String(contentsOfFile: arguments[4], encoding: .utf8)
    _ = try store.engine.transaction { db in
        try db.execute("INSERT INTO schemas (app, revision, document, uploaded_at) VALUES ('1108187390', 1, ?, '2026-01-01T00:00:00.000Z')", [document])
    }
    if arguments[2] == "store" { for batch in batches { _ = try store.ledger.persist(batch) } }
    store.close()
    exit(0)
}
if arguments[1] == "count" {
    // A fixed number of iterations, for instruction counting under callgrind (run twice and subtract).
    let iterations = Int(arguments[3]) ?? 0
    let schema = arguments[2] == "decode" ? SchemaReader.check(Array(try Data(contentsOf: URL(fileURLWithPath: arguments[4])))).schema : nil
    let decodable = arguments[2] == "decode" ? aakBodies.compactMap { verifier.verify($0, expecting: .aak).postback } : []
    let message = Array("raw verify".utf8)
    let der = try key.signDER(message: message)
    let digest = sha256(message)
    var verified = 0
    for iteration in 0..<iterations {
        switch arguments[2] {
        case "aak": if case .verified = verifier.verify(aakBodies[iteration % aakBodies.count], expecting: .aak) { verified += 1 }
        case "skan": if case .verified = verifier.verify(skanBodies[iteration % skanBodies.count], expecting: .skan) { verified += 1 }
        case "evp": if key.publicKey.verifyWithEVP(derSignature: der, digest: digest) { verified += 1 }
        case "decode": if let schema, case .success = SchemaDecoder.decode(schema, postback: decodable[iteration % decodable.count], receivedAt: Date()) { verified += 1 }
        default: if key.publicKey.verify(derSignature: der, digest: digest) { verified += 1 }
        }
    }
    precondition(verified == iterations)
    exit(0)
}
let aak = measure(seconds: seconds) {
    index = (index + 1) % aakBodies.count
    if case .verified = verifier.verify(aakBodies[index], expecting: .aak) { return true }
    return false
}
let skan = measure(seconds: seconds) {
    index = (index + 1) % skanBodies.count
    if case .verified = verifier.verify(skanBodies[index], expecting: .skan) { return true }
    return false
}
// The bare verify through our key object (its P-256 key table), and OpenSSL's own EVP_PKEY_verify on the same
// key, for locating overhead: digest precomputed, DER precomputed.
let message = Array("raw verify".utf8)
let der = try key.signDER(message: message)
let digest = sha256(message)
let raw = measure(seconds: seconds) { key.publicKey.verify(derSignature: der, digest: digest) }
let evp = measure(seconds: seconds) { key.publicKey.verifyWithEVP(derSignature: der, digest: digest) }
// Interleaved slices of the whole AAK path and OpenSSL's own verify, so drift in machine speed hits both alike.
var aakNanoseconds: UInt64 = 0
var rawNanoseconds: UInt64 = 0
var aakDone = 0
var rawDone = 0
let interleaveEnd = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
while DispatchTime.now().uptimeNanoseconds < interleaveEnd {
    var start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<200 {
        index = (index + 1) % aakBodies.count
        if case .verified = verifier.verify(aakBodies[index], expecting: .aak) { aakDone += 1 }
    }
    aakNanoseconds += DispatchTime.now().uptimeNanoseconds - start
    start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<200 where key.publicKey.verifyWithEVP(derSignature: der, digest: digest) { rawDone += 1 }
    rawNanoseconds += DispatchTime.now().uptimeNanoseconds - start
}
let interleaved = (Double(aakDone) / Double(aakNanoseconds)) / (Double(rawDone) / Double(rawNanoseconds))
print(String(format: "aak_per_s=%.0f skan_per_s=%.0f raw_verify_per_s=%.0f evp_verify_per_s=%.0f interleaved_aak_over_evp=%.3f", aak, skan, raw, evp, interleaved))
if arguments.contains("--breakdown") {
    let outer = measure(seconds: 1) { index = (index + 1) % aakBodies.count; return (try? JSONParser.parse(aakBodies[index])) != nil }
    let objects = aakBodies.map { try! JSONParser.parse($0).object! }
    let jwsTexts = objects.map { Array($0["jws-string"]!.string!.utf8) }
    let parse = measure(seconds: 1) { index = (index + 1) % jwsTexts.count; if case .success = CompactJWS.parse(jwsTexts[index]) { return true }; return false }
    let parsed = jwsTexts.map { try! CompactJWS.parse($0).get() }
    let payload = measure(seconds: 1) { index = (index + 1) % parsed.count; return (try? JSONParser.parse(parsed[index].payload)) != nil }
    let object = measure(seconds: 1) { index = (index + 1) % objects.count; return verifier.verify(object: objects[index]).outcome == .verified }
    print(String(format: "outer_json_per_s=%.0f jws_parse_per_s=%.0f payload_json_per_s=%.0f verify_object_per_s=%.0f", outer, parse, payload, object))
}
