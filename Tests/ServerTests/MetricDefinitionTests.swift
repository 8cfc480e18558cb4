import Foundation
import Store
import Testing
@testable import PostbackServer

/// Every metric and dimension is defined once, in the code, and the same words reach docs/metrics.md, the OpenAPI
/// document and `countersign report --help` (issue 26, item 1).
@Suite struct MetricDefinitionTests {
    /// Text with every run of white space as one space, and YAML's doubled quotes undone.
    static func flat(_ text: String) -> String {
        text.replacingOccurrences(of: "''", with: "'").split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOf: Checkout.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func metricsDocumentDefinesEveryMetricAndDimensionInTheCodesWords() throws {
        let document = try Self.read("docs/metrics.md")
        for metric in ReportMetric.allCases {
            #expect(document.contains("| `\(metric.rawValue)` | \(metric.definition) |"), "docs/metrics.md: \(metric.rawValue)")
        }
        for dimension in ReportQuery.Dimension.allCases {
            #expect(document.contains("| `\(dimension.rawValue)` | \(dimension.definition) |"), "docs/metrics.md: \(dimension.rawValue)")
        }
        // Nothing else is defined there as a metric.
        let rows = document.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { String($0.dropFirst(3).prefix { $0 != "`" }) }
        #expect(Set(rows) == Set(ReportMetric.allCases.map(\.rawValue) + ReportQuery.Dimension.allCases.map(\.rawValue)))
    }

    @Test func theOpenAPIDocumentDescribesEachWithTheSameWords() throws {
        let document = Self.flat(try Self.read("docs/openapi.yaml"))
        for metric in ReportMetric.allCases {
            #expect(document.contains("\(metric.rawValue): { type: ") && document.contains("description: '\(Self.flat(metric.definition))' }"), "openapi: \(metric.rawValue)")
        }
        for dimension in ReportQuery.Dimension.allCases {
            #expect(document.contains("\(dimension.rawValue): \(Self.flat(dimension.definition))"), "openapi by: \(dimension.rawValue)")
        }
        #expect(!document.contains("unique_conversions"))
    }

    @Test func reportHelpShowsTheSameDefinitions() {
        let help = Self.flat(ReportCommand.helpMessage(columns: 120))
        for metric in ReportMetric.allCases { #expect(help.contains("\(metric.rawValue): \(Self.flat(metric.definition))"), "report --help: \(metric.rawValue)") }
        for dimension in ReportQuery.Dimension.allCases {
            #expect(help.contains("\(dimension.rawValue): \(Self.flat(dimension.definition))"), "report --help: \(dimension.rawValue)")
        }
    }
}
