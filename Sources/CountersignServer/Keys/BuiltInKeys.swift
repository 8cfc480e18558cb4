import JWS

/// Apple's published public keys, compiled into the binary so `verify` and `serve` work from any directory. The keys
/// directory (`--keys-dir`, default `./keys`) adds keys and overrides a built-in key of the same kid; `--key` adds more.
package enum BuiltInKeys {
    /// The PEM files of `Sources/CountersignServer/Keys/AppleKeys`, by file name (keys/README.md lists their sources).
    static let files: [(name: String, bytes: [UInt8])] = [
        ("apple-cas-identifier-0.pem", PackageResources.apple_cas_identifier_0_pem),
        ("apple-development-identifier-0.pem", PackageResources.apple_development_identifier_0_pem),
        ("apple-development-identifier-1.pem", PackageResources.apple_development_identifier_1_pem),
        ("skan-p192.pem", PackageResources.skan_p192_pem),
        ("skan-p256.pem", PackageResources.skan_p256_pem),
    ]

    /// The built-in entries (parsed once; a file that does not parse is a build defect the tests catch).
    package static let entries: [KeyEntry] = files.map { file in
        try! KeyEntry.parse(fileText: String(decoding: file.bytes, as: UTF8.self), origin: "built-in " + file.name, defaultKeyID: String(file.name.dropLast(4)))
    }
}
