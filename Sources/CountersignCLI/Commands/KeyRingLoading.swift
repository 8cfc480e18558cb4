import CountersignServer
import Foundation
import JWS

extension KeyOptions {
    /// Apple's built-in keys, overridden or added to by the key directory's, then the `--key` additions. The default
    /// directory (`./keys`) may be absent; one named with `--keys-dir` or `COUNTERSIGN_KEYS_DIR` must exist.
    func loadKeyRing() throws(CLIFailure) -> KeyRing {
        try KeyRingLoader.load(directory: resolvedDirectory, mustExist: resolvedDirectory != Self.defaultDirectory, extraKeys: extraKeys)
    }

    /// The key directory used when none is named.
    static let defaultDirectory = "keys"
}
