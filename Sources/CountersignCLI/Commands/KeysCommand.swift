import CountersignServer
import ArgumentParser
import Foundation
import Store
import JWS

/// `countersign keys`: the pinned key ring, and ad-network key generation.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "List the pinned keys, or generate an ad network's key pair.",
        subcommands: [List.self, Generate.self]
    )

    /// `countersign keys list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the pinned key ring: kid, environment, usage, curve, origin.")

        @OptionGroup var keys: KeyOptions
        @OptionGroup var output: OutputOption

        func run() async throws {
            let output = try self.output.chosen()
            let ring = try keys.loadKeyRing()
            let entries: [JSONObject] = ring.entries.map { entry in
                JSONObject([
                    JSONMember(key: "kid", value: .string(entry.keyID)),
                    JSONMember(key: "environment", value: .string(entry.environment.rawValue)),
                    JSONMember(key: "usage", value: .array(entry.usages.sorted().map { .string($0.rawValue) })),
                    JSONMember(key: "curve", value: .string(entry.key.curve.rawValue)),
                    JSONMember(key: "origin", value: .string(entry.origin)),
                ])
            }
            print(output.render(ReportTable(objects: entries)), terminator: "")
        }
    }

    /// `countersign keys generate --out DIR`.
    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate a P-256 key pair in the PEM forms Apple's ad-network registration asks for.",
            discussion: "Writes DIR/private-key.pem (PKCS#8, keep it secret) and DIR/public-key.pem (send it to Apple)."
        )

        @Option(help: "Directory to write the two PEM files to (created if missing).")
        var out: String

        func run() async throws {
            let key: ECPrivateKey
            do { key = try ECPrivateKey.generate(curve: .p256) } catch { throw CLIFailure.rejected(error.message) }
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                let privatePath = out + "/private-key.pem"
                guard FileManager.default.createFile(atPath: privatePath, contents: Data(key.pem.utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw CLIFailure.usage("cannot write \(privatePath)")
                }
                try Data(key.publicKey.pem.utf8).write(to: URL(fileURLWithPath: out + "/public-key.pem"))
            } catch let failure as CLIFailure {
                throw failure
            } catch {
                throw CLIFailure.usage("cannot write to \(out): \(error.localizedDescription)")
            }
            print(out + "/private-key.pem")
            print(out + "/public-key.pem")
        }
    }
}
