import ConversionSchema
import CountersignEncoder
import Foundation
import PostbackMint
import SchemaDesign
import Testing
import TestSupport

/// What `schema codegen --swift` writes compiles on its own with `swiftc`, and sets the values the package sets.
@Suite struct CodegenTests {
    /// Reads histories a line each and prints what the generated encoder sets for them.
    static func driver(app: String) -> String { """
    import Foundation
    let schema = EncodingSchema.app\(app)
    while let line = readLine() {
        let parts = line.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        var events: [String: Int] = [:]
        for item in parts[0].split(separator: ",") {
            let pair = item.split(separator: "=")
            events[String(pair[0])] = Int(pair[1]) ?? 0
        }
        let progress = UserProgress(events: events, revenue: Double(parts[1]) ?? 0, hoursSinceConversion: Double(parts[2]) ?? 0)
        let api = PostbackAPI(rawValue: parts[4]) ?? .adAttributionKit
        let update = ConversionEncoder.update(schema, conversionClass: parts[3] == "install" ? .install : .reengagement, progress: progress,
                                              at: Date(timeIntervalSince1970: 4_000_000_000), api: api)
        print(update.map { "\\($0.window),\\($0.fine.map(String.init) ?? "-"),\\($0.coarse?.rawValue ?? "-"),\\($0.lock)" } ?? "none")
    }
    """
    }

    /// game: bit fields; subscription: a table, and re-engagements with coarse values only.
    @Test(arguments: ["game", "subscription"]) func theGeneratedFileCompilesAloneAndAgreesWithThePackage(name: String) async throws {
        let directory = Checkout.temporaryDirectory()
        let schemaFile = Checkout.root.appendingPathComponent("examples/schemas/\(name).json").path
        let generated = try await countersign(["schema", "codegen", "--swift", schemaFile, "--output", directory + "/ConversionSchema.swift"])
        #expect(generated.status == 0, "\(generated.stderr)")
        let schema = EncodingSchemaCompiler.compile(try #require(SchemaReader.check(Array(try Data(contentsOf: URL(fileURLWithPath: schemaFile)))).schema))
        try Data(Self.driver(app: schema.app).utf8).write(to: URL(fileURLWithPath: directory + "/main.swift"))
        let compiled = try await runProcess("/usr/bin/env", ["swiftc", directory + "/ConversionSchema.swift", directory + "/main.swift", "-o", directory + "/encoder"])
        #expect(compiled.status == 0, "swiftc: \(compiled.stderr)")

        let names = Set(schema.versions.flatMap { version in
            [version.install, version.reengagement].compactMap { $0 }.flatMap { $0 }.flatMap { $0.fine.flatMap(\.events) + $0.coarse.flatMap(\.events) }.map(\.name)
        }).sorted()
        var generator = SeededGenerator(seed: 2026)
        var lines: [String] = []
        var expected: [String] = []
        for _ in 0..<2_000 {
            var events: [String: Int] = [:]
            for event in names where Bool.random(using: &generator) { events[event] = Int.random(in: 1...3, using: &generator) }
            let revenue = Bool.random(using: &generator) ? 0 : Double(Int.random(in: 1...20_000, using: &generator)) / 100
            let hours = Double(Int.random(in: 0..<900, using: &generator))
            let conversionClass: EncodingSchema.ConversionClass = Int.random(in: 0..<4, using: &generator) == 0 ? .reengagement : .install
            let api = PostbackAPI.allCases.randomElement(using: &generator) ?? .adAttributionKit
            lines.append(events.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + ";\(revenue);\(hours);\(conversionClass == .install ? "install" : "re");\(api.rawValue)")
            let update = ConversionEncoder.update(schema, conversionClass: conversionClass, progress: UserProgress(events: events, revenue: revenue, hoursSinceConversion: hours),
                                                  at: Date(timeIntervalSince1970: 4_000_000_000), api: api)
            expected.append(update.map { "\($0.window),\($0.fine.map(String.init) ?? "-"),\($0.coarse?.rawValue ?? "-"),\($0.lock)" } ?? "none")
        }
        let ran = try await runProcess(directory + "/encoder", [], input: Array((lines.joined(separator: "\n") + "\n").utf8))
        #expect(ran.status == 0)
        let answers = ran.stdout.split(separator: "\n").map(String.init)
        #expect(answers.count == expected.count)
        let differing = zip(answers, expected).enumerated().filter { $0.element.0 != $0.element.1 }
        #expect(differing.isEmpty, "\(differing.count) differ, first: \(differing.first.map { "\(lines[$0.offset]): \($0.element.0) against \($0.element.1)" } ?? "")")
        #expect(Set(expected).count > 20, "the histories reach many values")
    }
}
