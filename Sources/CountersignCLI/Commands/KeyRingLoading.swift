import CountersignServer
import Foundation
import JWS

extension KeyOptions {
    /// Apple's built-in keys, overridden or added to by the key directory's, then the `--key` additions. The default
    /// directory (`./keys`) may be absent; one named with `--keys-dir` or `COUNTERSIGN_KEYS_DIR` must exist.
    func loadKeyRing() throws(CLIFailure) -> KeyRing {
        do {
            var directoryEntries: [KeyEntry] = []
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: resolvedDirectory, isDirectory: &isDirectory) && isDirectory.boolValue
            if exists || resolvedDirectory != Self.defaultDirectory {
                directoryEntries = try KeyRing.load(directory: resolvedDirectory).entries
            }
            let overridden = Set(directoryEntries.map(\.keyID))
            let ring = try KeyRing(BuiltInKeys.entries.filter { !overridden.contains($0.keyID) } + directoryEntries)
            return try ring.adding(extraKeys.map { argument throws(KeyError) in try KeyRing.entry(argument: argument) })
        } catch {
            throw CLIFailure.usage(error.message)
        }
    }

    /// The key directory used when none is named.
    static let defaultDirectory = "keys"
}
