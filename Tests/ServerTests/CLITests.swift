import Foundation
import Testing
import TestSupport
import JWS
import PostbackMint
@testable import CountersignCLI
@testable import CountersignServer

/// The built `countersign` binary run on files: JSON fields and exit codes.
@Suite(.serialized) struct CLITests {
    func document(_ result: ProcessResult) throws -> JSONObject {
        try #require(try JSONParser.parse(Array(result.stdout.utf8)).object, "stdout: \(result.stdout) stderr: \(result.stderr)")
    }

    @Test func verifiesApplesDevelopmentPostbackOnlyWhenAllowed() async throws {
        let body = try Checkout.appleExample("aak-dev1-reengagement-fine")
        let refused = try await countersign(["verify", "--keys-dir", Checkout.keys, "-"], input: body)
        #expect(refused.status == 1)
        let refusedDocument = try document(refused)
        #expect(refusedDocument["outcome"] == .string("verified"))
        #expect(refusedDocument["reason"] == .string("development_not_allowed"))
        let allowed = try await countersign(["verify", "--allow-development", "--keys-dir", Checkout.keys, "-"], input: body)
        #expect(allowed.status == 0)
        let output = try document(allowed)
        #expect(output["outcome"] == .string("verified"))
        #expect(output["kid"] == .string("apple-development-identifier/1"))
        #expect(output["environment"] == .string("development"))
        #expect(output["protocol"] == .string("aak"))
        #expect(output["signed"]?.object?["conversion-type"] == .string("re-engagement"))
        #expect(output["unsigned"]?.object?["conversion-value"] == .number("24"))
        #expect(output["derived"]?.object?["source_identifier_digits"] == .number("4"))
    }

    @Test(arguments: ["skan-4.0-web-high-tier", "skan-3.0-winning", "skan-2.2", "hist-skan-2.0-b"])
    func verifiesSKANExamplesFromAFile(id: String) async throws {
        let path = Checkout.temporaryDirectory() + "/postback.json"
        try Data(try Checkout.appleExample(id)).write(to: URL(fileURLWithPath: path))
        let result = try await countersign(["verify", "--keys-dir", Checkout.keys, path])
        #expect(result.status == 0)
        let output = try document(result)
        #expect(output["protocol"] == .string("skan"))
        #expect(output["environment"] == .string("production"))
        #expect(output["kid"] == .string(id.contains("2.0") ? "skan-p192" : "skan-p256"))
    }

    @Test func unverifiableAndInvalidExitOne() async throws {
        let stranger = try ECPrivateKey.generate()
        let unknown = try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid("X")), key: stranger, keyID: "apple-cas-identifier/7")
        let unverifiable = try await countersign(["verify", "--keys-dir", Checkout.keys], input: unknown)
        #expect(unverifiable.status == 1)
        #expect(try document(unverifiable)["outcome"] == .string("unverifiable"))
        #expect(try document(unverifiable)["reason"] == .string("unknown_kid"))
        let invalid = try await countersign(["verify", "--keys-dir", Checkout.keys], input: Array("{\"jws-string\": \"a.b\"}".utf8))
        #expect(invalid.status == 1)
        #expect(try document(invalid)["reason"] == .string("malformed_jws"))
    }

    @Test func extraKeyMakesATestPostbackCountable() async throws {
        let directory = Checkout.temporaryDirectory()
        let generated = try await countersign(["keys", "generate", "--out", directory])
        #expect(generated.status == 0)
        let key = try ECPrivateKey(pem: String(contentsOfFile: directory + "/private-key.pem", encoding: .utf8))
        let body = try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid("Y")), key: key, keyID: "network/0")
        let result = try await countersign(["verify", "--keys-dir", Checkout.keys, "--key", "network/0=\(directory)/public-key.pem"], input: body)
        #expect(result.status == 0)
        #expect(try document(result)["countable"] == .bool(true))
        let listed = try await countersign(["keys", "list", "--keys-dir", Checkout.keys, "--key", "network/0=\(directory)/public-key.pem", "--format", "json"])
        guard case .array(let keys)? = try JSONParser.parse(Array(listed.stdout.utf8)).object?["rows"] else { Issue.record("no rows: \(listed.stdout)"); return }
        #expect(keys.compactMap { $0.object?["kid"]?.string }.sorted() == [
            "apple-cas-identifier/0", "apple-development-identifier/0", "apple-development-identifier/1", "network/0", "skan-p192", "skan-p256",
        ])
    }

    @Test func usageErrorsExitTwo() async throws {
        #expect(try await countersign(["verify", "--keys-dir", Checkout.keys, "/no/such/file"]).status == 2)
        #expect(try await countersign(["verify", "--no-such-flag"]).status == 2)
        #expect(try await countersign(["verify", "--keys-dir", "/no/such/dir", "-"], input: []).status == 2)
        #expect(try await countersign(["verify", "--keys-dir", Checkout.keys, "--key", "broken"], input: []).status == 2)
        let stderr = try await countersign(["verify", "--keys-dir", Checkout.keys, "/no/such/file"]).stderr
        #expect(stderr.split(separator: "\n").count == 1)
    }

    /// A wrong `--by` lists the names `--by` takes, spelled as it takes them (issue 13).
    @Test func unknownDimensionsSuggestNamesThatWork() async throws {
        let database = Checkout.temporaryDirectory() + "/db.sqlite"
        #expect(try await countersign(["apikey", "create", "--name", "t", "--database", database]).status == 0)
        for command in [["report"], ["adservices", "report"]] {
            let result = try await countersign(command + ["--database", database, "--by", "nope"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--by: unknown dimension \"nope\""), "\(result.stderr)")
            #expect(result.stderr.contains("ad_group"))
            #expect(!result.stderr.contains("ad-group"))
            let suggested = try #require(result.stderr.split(separator: ";").last?.split(separator: "use").last)
            let first = try #require(suggested.split(separator: ",").first?.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(try await countersign(command + ["--database", database, "--by", first]).status == 0, "\(first)")
        }
    }

    @Test func impressionsSignedByTheCLIVerify() async throws {
        let directory = Checkout.temporaryDirectory()
        _ = try await countersign(["keys", "generate", "--out", directory])
        let signed = try await countersign(["impression", "sign", "--key", directory + "/private-key.pem", "--network-id", "example.adattributionkit",
                                      "--source-identifier", "5239", "--advertised-item", "1108187390", "--publisher-item", "5838492",
                                      "--eligible-for-re-engagement", "--timestamp", "1719599957239"])
        #expect(signed.status == 0)
        let jws = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard case .success(let parsed) = CompactJWS.parse(Array(jws.utf8)) else { Issue.record("not a JWS: \(jws)"); return }
        #expect(parsed.header.keyID == "example.adattributionkit")
        let payload = try #require(try JSONParser.parse(parsed.payload).object)
        #expect(payload["source-identifier"] == .number("5239"))
        #expect(payload["timestamp"] == .number("1719599957239"))
        #expect(payload["eligible-for-re-engagement"] == .bool(true))
        #expect(payload["impression-type"] == .string("app-impression"))
        let verified = try await countersign(["impression", "verify", "--public-key", directory + "/public-key.pem"], input: Array(jws.utf8))
        #expect(verified.status == 0)
        var tampered = Array(jws.utf8)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(try await countersign(["impression", "verify", "--public-key", directory + "/public-key.pem"], input: tampered).status == 1)
    }

    /// `countersign copy` moves an installation into PostgreSQL, reports what it did, and refuses what it cannot open.
    @Test func copyMovesAnInstallationAndSaysWhatItDid() async throws {
        let database = Checkout.temporaryDirectory() + "/db.sqlite"
        #expect(try await countersign(["apikey", "create", "--name", "moved", "--database", database]).status == 0)
        let target = try TestEngine.postgres.freshDatabase()
        let copied = try await countersign(["copy", "--from", database, "--to", target])
        #expect(copied.status == 0, "\(copied.stderr)")
        let summary = try #require(try JSONParser.parse(Array(copied.stdout.utf8)).object)
        #expect(summary["api_keys"]?.object?["copied"] == .number("1"))
        #expect(summary["check"] == .string("counts and report totals agree"))
        #expect(copied.stderr.contains("api_keys: 1/1"))
        let again = try await countersign(["copy", "--from", database, "--to", target])
        #expect(try JSONParser.parse(Array(again.stdout.utf8)).object?["api_keys"]?.object?["already_there"] == .number("1"))
        let listed = try await countersign(["apikey", "list", "--database", target])
        #expect(listed.stdout.contains("moved"))
        for (from, to) in [("/no/such.sqlite", target), (database, "postgres://nobody")] {
            let refused = try await countersign(["copy", "--from", from, "--to", to])
            #expect(refused.status == 2)
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        }
    }
}

/// `countersign --version` and the policy the server states when it starts (issue 15, item 6).
@Suite struct VersionAndPolicyTests {
    @Test func versionIsPrinted() async throws {
        let result = try await countersign(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
    }

    @Test func theStartupLogStatesTheEffectivePolicy() throws {
        let directory = Checkout.temporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Checkout.binary)
        process.arguments = ["serve", "--port", "0", "--database", directory + "/db.sqlite", "--keys-dir", Checkout.keys,
                             "--accept-ad-network", "example.adattributionkit", "--durability", "full", "--log-format", "json"]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        var text = ""
        while !text.contains("\"countersign listening\""), let chunk = try errors.fileHandleForReading.read(upToCount: 1), !chunk.isEmpty {
            text += String(decoding: chunk, as: UTF8.self)
        }
        while !text.hasSuffix("\n"), let chunk = try errors.fileHandleForReading.read(upToCount: 1), !chunk.isEmpty {
            text += String(decoding: chunk, as: UTF8.self)
        }
        process.terminate()
        process.waitUntilExit(within: 60, "countersign serve after SIGTERM")
        let line = try #require(text.split(separator: "\n").last { $0.contains("\"countersign listening\"") })
        for expected in ["\"engine\":\"sqlite\"", "\"durability\":\"full\"", "\"allow_development\":\"false\"",
                         "\"accepted_ad_networks\":\"example.adattributionkit\"", "\"version\":\"\(Countersign.version)\""] {
            #expect(line.contains(expected), "\(expected) in \(line)")
        }
    }
}

/// Schemas managed from the command line, without curl (issue 15, item 6).
@Suite struct SchemaRegistryCLITests {
    @Test func uploadListHistoryAndDiff() async throws {
        let directory = Checkout.temporaryDirectory()
        let database = directory + "/schemas.sqlite"
        let game = Checkout.root.appendingPathComponent("examples/schemas/game.json").path
        let first = try await countersign(["schema", "upload", game, "--database", database])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try JSONParser.parse(Array(first.stdout.utf8)).object?["revision"] == .number("1"))
        let changed = try String(contentsOfFile: game, encoding: .utf8).replacingOccurrences(of: "\"USD\"", with: "\"EUR\"")
        try changed.write(toFile: directory + "/game-eur.json", atomically: true, encoding: .utf8)
        #expect(try await countersign(["schema", "upload", directory + "/game-eur.json", "--database", database]).status == 0)
        let list = try await countersign(["schema", "list", "--format", "csv", "--database", database])
        #expect(list.stdout.split(separator: "\r\n").map { $0.split(separator: ",").prefix(2).joined(separator: ",") } == ["app,revision", "1108187390,2"])
        let history = try await countersign(["schema", "history", "1108187390", "--format", "ndjson", "--database", database])
        let revisions = try history.stdout.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)).object?["revision"] }
        #expect(revisions == [.number("1"), .number("2")])
        let diff = try await countersign(["schema", "diff", "1108187390", "--database", database])
        #expect(diff.status == 1)
        #expect(diff.stdout.contains("-") && diff.stdout.contains("\"USD\"") && diff.stdout.contains("\"EUR\""))
        let same = try await countersign(["schema", "diff", "1108187390", "--from", "2", "--to", "2", "--database", database])
        #expect(same.status == 0)
        #expect(try await countersign(["schema", "history", "42", "--database", database]).status == 1)
        try Data("{\"format\": 1}".utf8).write(to: URL(fileURLWithPath: directory + "/bad.json"))
        let bad = try await countersign(["schema", "upload", directory + "/bad.json", "--database", database])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("countersign schema check"))
    }

    @Test func simulateUsesItsKeyAgain() async throws {
        let directory = Checkout.temporaryDirectory()
        let arguments = ["simulate", "--count", "3", "--key-out", directory + "/sim", "--out", directory + "/out.ndjson"]
        #expect(try await countersign(arguments).status == 0)
        let key = try String(contentsOfFile: directory + "/sim/private-key.pem", encoding: .utf8)
        let again = try await countersign(arguments)
        #expect(again.status == 0)
        #expect(!again.stderr.contains("generated a signing key"))
        #expect(try String(contentsOfFile: directory + "/sim/private-key.pem", encoding: .utf8) == key)
    }

    /// Finding 9 of trust round 4: an ack log on a full disk trapped (`try!`, exit 132). It now says so in one line,
    /// exits 1, and the summary counts the acknowledged postbacks the log could not hold.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full")))
    func anAckLogOnAFullDiskFailsInOneLine() async throws {
        let work = Checkout.temporaryDirectory()
        _ = try await countersign(["keys", "generate", "--out", work + "/key"])
        let receiver = try ReceiverProcess(database: work + "/db.sqlite",
                                           extraArguments: ["--key", "countersign-simulator/0=\(work)/key/public-key.pem"])
        defer { receiver.stop() }
        let run = try await countersign(["simulate", "--count", "20", "--concurrency", "2", "--url", receiver.url,
                                   "--signing-key", work + "/key/private-key.pem", "--ack-log", "/dev/full"])
        #expect(run.status == 1)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("countersign: --ack-log /dev/full: No space left on device") == true, "\(run.stderr)")
        let summary = try #require(try JSONParser.parse(Array(run.stdout.utf8)).object)
        let acknowledged = ["stored", "duplicate", "replay"].compactMap { summary[$0]?.wholeNumber }.reduce(0, +)
        #expect(acknowledged > 0)
        #expect(summary["ack_log_unwritten"]?.wholeNumber == acknowledged)
    }
}

/// Apple's keys are built into the binary; a key directory adds keys or overrides one (issue 15, item 6).
@Suite struct BuiltInKeyTests {
    func verify(in directory: String, _ arguments: [String]) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Checkout.binary)
        process.arguments = ["verify", "--allow-development"] + arguments + [Checkout.root.appendingPathComponent("examples/postback.json").path]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit(within: 60, "countersign verify")
        return ProcessResult(status: process.terminationStatus, stdout: String(decoding: text, as: UTF8.self), stderr: "")
    }

    @Test func verifyWorksFromAnyDirectory() throws {
        let result = try verify(in: Checkout.temporaryDirectory(), [])
        #expect(result.status == 0)
        #expect(result.stdout.contains("\"kid\": \"apple-development-identifier/1\""))
    }

    @Test func aKeyDirectoryOverridesABuiltInKey() async throws {
        let directory = Checkout.temporaryDirectory()
        _ = try await countersign(["keys", "generate", "--out", directory + "/generated"])
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        let impostor = try String(contentsOfFile: directory + "/generated/public-key.pem", encoding: .utf8)
        try ("kid: apple-development-identifier/1\nenvironment: development\n" + impostor)
            .write(toFile: directory + "/keys/apple-development-identifier-1.pem", atomically: true, encoding: .utf8)
        // The directory's key replaces Apple's, so Apple's own example no longer verifies.
        let result = try verify(in: directory, [])
        #expect(result.status == 1)
        #expect(result.stdout.contains("bad_signature"))
    }
}

/// Errors a newcomer meets say what to do, in one line (issue 15, item 6).
@Suite struct NewcomerErrorTests {
    func oneLine(_ result: ProcessResult, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 2, sourceLocation: sourceLocation)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(expected), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func aPortInUseADatabaseThatCannotBeOpenedAndAPrivateKey() async throws {
        let directory = Checkout.temporaryDirectory()
        let first = Process()
        first.executableURL = URL(fileURLWithPath: Checkout.binary)
        first.arguments = ["serve", "--port", "0", "--database", directory + "/a.sqlite", "--log-level", "error"]
        let output = Pipe()
        first.standardOutput = output
        first.standardError = FileHandle.nullDevice
        try first.run()
        defer { first.terminate(); first.waitUntilExit(within: 60, "the first server") }
        var line = ""
        while !line.contains("\n"), let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty { line += String(decoding: byte, as: UTF8.self) }
        let port = try #require(line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        oneLine(try await countersign(["serve", "--port", port, "--database", directory + "/b.sqlite", "--log-level", "error"]),
                "port \(port) on 127.0.0.1 is in use (another countersign serve?); stop that process or choose another --port")
        oneLine(try await countersign(["serve", "--port", "0", "--database", "/proc/no-such-dir/x.sqlite"]),
                "cannot create /proc/no-such-dir; check the path and its permissions, or pass another --database")
        _ = try await countersign(["keys", "generate", "--out", directory + "/key"])
        oneLine(try await countersign(["verify", "--key", "x/1=\(directory)/key/private-key.pem", "-"], input: []), "this is a private key; pin the public key instead")
        oneLine(try await countersign(["serve", "--durability", "sometimes"]), "expected normal, full")
    }

    @Test func jsonErrorsNameTheLineAndColumn() async throws {
        let text = Array("{\n  \"a\": 1,\n  \"b\": ]\n}".utf8)
        let verified = try await countersign(["verify", "-"], input: text)
        #expect(verified.status == 1)
        #expect(verified.stdout.contains("unexpected character at line 3, column 8"))
        let path = Checkout.temporaryDirectory() + "/schema.json"
        try Data(text).write(to: URL(fileURLWithPath: path))
        let checked = try await countersign(["schema", "check", path])
        #expect(checked.stdout.contains("not JSON: unexpected character at line 3, column 8"))
    }
}
