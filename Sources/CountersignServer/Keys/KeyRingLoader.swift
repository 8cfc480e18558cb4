import Foundation
import JWS

/// The keys a receiver trusts: Apple's built-in keys, overridden or added to by a key directory's, then extra keys.
package enum KeyRingLoader {
    /// The ring the settings `keys-dir` and `keys` name: the default directory may be absent, one named must exist.
    package static func load(_ settings: ServerSettings) throws(CLIFailure) -> KeyRing {
        try load(directory: settings.keysDirectory, mustExist: settings.keysDirectory != ServerSettings().keysDirectory, extraKeys: settings.extraKeys)
    }

    /// Loads the ring. `directory` may be absent unless `mustExist` (one named with `--keys-dir` or
    /// `COUNTERSIGN_KEYS_DIR` must exist); `extraKeys` are `KID=PEM_FILE` arguments.
    package static func load(directory: String, mustExist: Bool, extraKeys: [String]) throws(CLIFailure) -> KeyRing {
        do {
            var directoryEntries: [KeyEntry] = []
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) && isDirectory.boolValue
            if exists || mustExist {
                directoryEntries = try KeyRing.load(directory: directory).entries
            }
            let overridden = Set(directoryEntries.map(\.keyID))
            let ring = try KeyRing(BuiltInKeys.entries.filter { !overridden.contains($0.keyID) } + directoryEntries)
            return try ring.adding(extraKeys.map { argument throws(KeyError) in try KeyRing.entry(argument: argument) })
        } catch {
            throw CLIFailure.usage(error.message)
        }
    }
}
