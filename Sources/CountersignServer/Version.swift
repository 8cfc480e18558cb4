/// This build's version, printed by `countersign --version`, in the startup log and in the forwarder's User-Agent.
package enum CountersignVersion {
    /// The version number.
    package static let current = "0.17.0"
}
