import Foundation
import Store
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

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

    /// The names defined in a part of docs/metrics.md (its `| \`name\` | ... |` rows).
    static func defined(_ part: Substring) -> [String] {
        part.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { String($0.dropFirst(3).prefix { $0 != "`" }) }
    }

    @Test func metricsDocumentDefinesEveryMetricAndDimensionInTheCodesWords() throws {
        let document = try Self.read("docs/metrics.md")
        let split = try #require(document.range(of: "## Spend, claims and return"))
        let postbacks = try #require(document.range(of: "## Postback by postback"))
        let cohortsStart = try #require(document.range(of: "## Cohort curves"))
        let reports = document[..<split.lowerBound], performance = document[split.lowerBound..<cohortsStart.lowerBound]
        let cohorts = document[cohortsStart.lowerBound..<postbacks.lowerBound]
        let signingStart = try #require(document.range(of: "## What each network signs"))
        let reconciliation = document[postbacks.lowerBound..<signingStart.lowerBound], signing = document[signingStart.lowerBound...]
        // What each network signs (issue 48, item 6): the same words in the docs, the CLI's help and the OpenAPI document.
        let signingHelp = Self.flat(SigningCommand.helpMessage(columns: 120))
        let openAPI = Self.flat(try Self.read("docs/openapi.yaml"))
        for column in SigningMix.Column.allCases {
            #expect(signing.contains("| `\(column.rawValue)` | \(column.definition) |"), "docs/metrics.md, signing: \(column.rawValue)")
            #expect(signingHelp.contains("\(column.rawValue): \(Self.flat(column.definition))"), "signing --help: \(column.rawValue)")
            #expect(openAPI.contains("\(column.rawValue): { type: ") && openAPI.contains("description: '\(Self.flat(column.definition))' }"), "openapi: \(column.rawValue)")
        }
        #expect(Set(Self.defined(signing)) == Set(SigningMix.Column.allCases.map(\.rawValue)))
        // Cohort curves (issue 49, deliverable 5): the same words in the docs, the CLI's help and the OpenAPI document.
        let cohortsHelp = Self.flat(CohortsCommand.helpMessage(columns: 120))
        for metric in CohortMetric.allCases {
            #expect(cohorts.contains("| `\(metric.rawValue)` | \(metric.definition) |"), "docs/metrics.md, cohorts: \(metric.rawValue)")
            #expect(cohortsHelp.contains("\(metric.rawValue): \(Self.flat(metric.definition))"), "cohorts --help: \(metric.rawValue)")
            #expect(openAPI.contains("\(metric.rawValue): { type: ") && openAPI.contains("description: '\(Self.flat(metric.definition))' }"), "openapi: \(metric.rawValue)")
        }
        #expect(Set(Self.defined(cohorts)) == Set(CohortMetric.allCases.map(\.rawValue)))
        for metric in ReportMetric.allCases {
            #expect(reports.contains("| `\(metric.rawValue)` | \(metric.definition) |"), "docs/metrics.md: \(metric.rawValue)")
        }
        for dimension in ReportQuery.Dimension.allCases {
            #expect(reports.contains("| `\(dimension.rawValue)` | \(dimension.definition) |"), "docs/metrics.md: \(dimension.rawValue)")
        }
        for metric in PerformanceMetric.allCases {
            #expect(performance.contains("| `\(metric.rawValue)` | \(metric.definition) |"), "docs/metrics.md, performance: \(metric.rawValue)")
        }
        for dimension in PerformanceQuery.Dimension.allCases {
            #expect(performance.contains("| `\(dimension.rawValue)` | \(dimension.definition) |"), "docs/metrics.md, performance: \(dimension.rawValue)")
        }
        for status in PostbackReconciliation.Status.allCases {
            #expect(reconciliation.contains("| `\(status.rawValue)` | \(status.definition) |"), "docs/metrics.md, reconciliation: \(status.rawValue)")
        }
        // Nothing else is defined there.
        #expect(Set(Self.defined(reports)) == Set(ReportMetric.allCases.map(\.rawValue) + ReportQuery.Dimension.allCases.map(\.rawValue)))
        #expect(Set(Self.defined(performance)) == Set(PerformanceMetric.allCases.map(\.rawValue) + PerformanceQuery.Dimension.allCases.map(\.rawValue)))
        #expect(Set(Self.defined(reconciliation)) == Set(PostbackReconciliation.Status.allCases.map(\.rawValue)))
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

    @Test func performanceHelpAndDocumentShowTheSameDefinitions() throws {
        let help = Self.flat(PerformanceCommand.helpMessage(columns: 120))
        let document = Self.flat(try Self.read("docs/openapi.yaml"))
        for metric in PerformanceMetric.allCases {
            #expect(help.contains("\(metric.rawValue): \(Self.flat(metric.definition))"), "performance --help: \(metric.rawValue)")
            #expect(document.contains("description: '\(Self.flat(metric.definition))' }"), "openapi PerformanceRow: \(metric.rawValue)")
        }
        for dimension in PerformanceQuery.Dimension.allCases {
            #expect(help.contains("\(dimension.rawValue): \(Self.flat(dimension.definition))"), "performance --help: \(dimension.rawValue)")
            #expect(document.contains("\(dimension.rawValue): \(Self.flat(dimension.definition))"), "openapi performance by: \(dimension.rawValue)")
        }
    }

    @Test func reconcileHelpAndOpenAPIShowTheSameStatuses() throws {
        let help = Self.flat(ReconcileCommand.helpMessage(columns: 120))
        let document = Self.flat(try Self.read("docs/openapi.yaml"))
        for status in PostbackReconciliation.Status.allCases {
            #expect(help.contains("\(status.rawValue): \(Self.flat(status.definition))"), "reconcile --help: \(status.rawValue)")
            #expect(document.contains("\(status.rawValue): \(Self.flat(status.definition))"), "openapi reconciliation: \(status.rawValue)")
        }
    }

    /// docs/setup.md, `apps status --help` and the OpenAPI document say what the code does (issue 26, item 6).
    @Test func setupStatusIsDefinedOnceInTheCodesWords() throws {
        let setup = try Self.read("docs/setup.md")
        let help = Self.flat(AppsCommand.Status.helpMessage(columns: 120))
        let document = Self.flat(try Self.read("docs/openapi.yaml"))
        var names: [String] = []
        var definitions = SetupStatus.columns.map { ($0.name, $0.definition) } + ArrivalChannel.allCases.map { ($0.rawValue, $0.definition) }
            + SetupStatus.DeveloperCopies.allCases.map { ($0.rawValue, $0.definition) }
        // Each app's summary (trust round 4, finding 7: signature-checked copies apart from the rest).
        definitions += SetupStatus.summaryFields.map { ($0.name, $0.definition) }
        for (name, definition) in definitions {
            names.append(name)
            #expect(setup.contains("| `\(name)` | \(definition) |"), "docs/setup.md: \(name)")
            #expect(help.contains("\(name): \(Self.flat(definition))"), "apps status --help: \(name)")
            #expect(document.contains("\(name): { ") && document.contains(Self.flat(definition)) || document.contains("\(name): \(Self.flat(definition))"), "openapi: \(name)")
        }
        // What the postbacks say about an app's encoder (issue 47, item 5): a row with when it shows, then its cause.
        for kind in EncoderHealth.Kind.allCases {
            names.append(kind.rawValue)
            #expect(setup.contains("| `\(kind.rawValue)` | ") && setup.contains(" | \(kind.cause) |"), "docs/setup.md: \(kind.rawValue)")
            #expect(help.contains("\(kind.rawValue): \(Self.flat(kind.cause))"), "apps status --help: \(kind.rawValue)")
            #expect(document.contains(kind.rawValue), "openapi: \(kind.rawValue)")
        }
        let status = try #require(setup.range(of: "## Is it working?"))
        #expect(Set(Self.defined(setup[status.lowerBound...])) == Set(names))
    }

    @Test func reportHelpShowsTheSameDefinitions() {
        let help = Self.flat(ReportCommand.helpMessage(columns: 120))
        for metric in ReportMetric.allCases { #expect(help.contains("\(metric.rawValue): \(Self.flat(metric.definition))"), "report --help: \(metric.rawValue)") }
        for dimension in ReportQuery.Dimension.allCases {
            #expect(help.contains("\(dimension.rawValue): \(Self.flat(dimension.definition))"), "report --help: \(dimension.rawValue)")
        }
    }
}
