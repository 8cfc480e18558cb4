import Foundation
import Testing

/// The encoder package stays something an iOS app can add: no dependency, and nothing imported but the standard
/// library, Foundation and Apple's own frameworks.
@Suite struct EncoderPackageTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Packages/CountersignEncoder")

    @Test func theManifestNamesNoDependency() throws {
        let manifest = try String(contentsOf: Self.package.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(!manifest.contains(".package("), "the encoder package depends on no package")
        #expect(!manifest.contains("dependencies:"), "and its target on nothing")
        #expect(manifest.contains(".library(name: \"CountersignEncoder\""))
    }

    @Test func itsSourcesImportOnlyFoundationAndApplesFrameworks() throws {
        let sources = Self.package.appendingPathComponent("Sources/CountersignEncoder")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 5)
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import ") {
                #expect(["import Foundation", "import StoreKit", "import AdAttributionKit"].contains(String(line)), "\(file): \(line)")
            }
        }
    }
}
