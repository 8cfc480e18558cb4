import CountersignServer
import Foundation
import JWS

extension KeyOptions {
    /// Apple's built-in keys, overridden or added to by the key directory's, then the `--key` additions, read as `serve`
    /// reads them (flags, then `COUNTERSIGN_KEYS_DIR` and `COUNTERSIGN_KEYS`). The default directory (`./keys`) may be
    /// absent; one named must exist.
    func loadKeyRing(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIFailure) -> KeyRing {
        let arguments = (keysDirectory.map { ["--keys-dir", $0] } ?? []) + extraKeys.flatMap { ["--key", $0] }
        return try KeyRingLoader.load(try ServerSettings.reading(["keys-dir", "keys"], arguments: arguments, environment: environment))
    }
}
