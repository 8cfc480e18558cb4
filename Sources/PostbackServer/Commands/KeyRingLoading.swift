import JWS

extension KeyOptions {
    /// Loads the key directory and the `--key` additions (`extra` adds keys from other sources, such as a config file).
    func loadKeyRing(extra: [String] = []) throws(CLIFailure) -> KeyRing {
        do {
            let ring = try KeyRing.load(directory: resolvedDirectory)
            return try ring.adding((extraKeys + extra).map { argument throws(KeyError) in try KeyRing.entry(argument: argument) })
        } catch {
            throw CLIFailure.usage(error.message)
        }
    }
}
