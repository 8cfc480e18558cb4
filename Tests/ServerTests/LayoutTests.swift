import Foundation
import Testing
import TestSupport

/// The folder layout is the map of the architecture (issue 29): the executable holds the commands only, and every
/// route, rule and SQL statement lives in a library.
@Suite struct LayoutTests {
    /// What the executable's sources may not hold: SQL, route registration, HTTP handling.
    static let forbidden: [(what: String, pattern: String)] = [
        ("SQL", #"\b(SELECT\s+\S|INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+[a-z_]+\s+SET|CREATE\s+(TABLE|VIEW|INDEX))"#),
        ("a route", #"\brouter\.(get|post|put|patch|delete|add|group)\b|RouterPath\(|Router\("#),
        ("a request handler", #"\bRequest\b.*\bContext\b"#),
    ]

    @Test func theExecutableHoldsNoRouteRuleOrSQL() throws {
        let folder = Checkout.root.appendingPathComponent("Sources/CountersignCLI")
        let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count > 10, "the commands are in \(folder.path)")
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for (what, pattern) in Self.forbidden {
                let expression = try Regex(pattern)
                #expect(!text.contains(expression), "\(file) holds \(what); it belongs in CountersignServer or Store")
            }
        }
        // The library's own folders are there (a reader finds a route in HTTP/, a service in Services/).
        for folder in ["HTTP", "Services", "Settings", "Rendering", "Logging", "Keys", "Dashboard"] {
            #expect(FileManager.default.fileExists(atPath: Checkout.root.appendingPathComponent("Sources/CountersignServer/\(folder)").path), "\(folder)")
        }
    }
}
