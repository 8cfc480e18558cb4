import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Store

/// `countersign adservices`: the token-exchange queue and Apple Ads attribution reports.
struct AdServicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adservices",
        abstract: "Apple Ads: token jobs waiting, retrying or failed, and attribution reports.",
        subcommands: [Status.self, Report.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count token jobs by state and list the pending, retrying and failed ones.",
            discussion: """
            States: pending (not yet sent to Apple), retrying (Apple answered 404 or 5xx, or could not be reached; \
            next_attempt_at says when), done (the record is stored), failed (failure_reason: token_invalid, not_found, \
            token_expired or unexpected_status_N).
            Example: countersign adservices status --database data/countersign.sqlite
            """
        )
        @OptionGroup var database: DatabaseOption
        @Flag(help: "List done jobs too.") var all = false
        @Option(help: "Jobs listed at most.") var limit = 100
        @OptionGroup var output: OutputOption

        func run() async throws {
            let output = try self.output.chosen()
            guard limit > 0 else { throw CLIFailure.usage("--limit must be positive") }
            let store = try database.open()
            let counts = try await store.tokenJobs.counts()
            let states: [TokenJobState] = all ? TokenJobState.allCases : [.pending, .retrying, .failed]
            let jobs = try await store.tokenJobs.list(states: states, limit: limit)
            switch output {
            case .json:
                print(output.render(jobs, extra: [TokenJobState.countsMember(counts)]), terminator: "")
            case .table:
                print(TokenJobState.allCases.map { "\($0.rawValue)=\(counts[$0] ?? 0)" }.joined(separator: " "))
                if !jobs.rows.isEmpty { print(output.render(jobs), terminator: "") }
            case .csv, .ndjson:
                print(output.render(jobs), terminator: "")
            }
        }
    }

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Attribution records counted by organisation, campaign, ad group, keyword, ad, claim type, country and more.",
            discussion: """
            Dimensions for --by: \(AttributionReportQuery.Dimension.allCases.map(\.rawValue).joined(separator: ", ")).
            Example: countersign adservices report --by campaign,country --from 2026-11-01
            """
        )
        @OptionGroup var database: DatabaseOption
        @Option(help: "Comma-separated dimensions to group by.") var by: String?
        @OptionGroup var period: PeriodOptions
        @Option(help: "IANA time zone of day buckets and of dates without a zone (default UTC).") var tz: String?
        @Option(help: "The app id the token or dictionary was sent with.") var app: String?
        @Option(help: "adservices or iad.") var source: String?
        @Flag(name: .customLong("include-test"), help: "Include Apple's developer-mode test payloads.") var includeTest = false
        @Flag(name: .customLong("include-client-reported"), help: "Count iAd records the app reported beside Apple's AdServices records.")
        var includeClientReported = false
        @OptionGroup var output: OutputOption

        func run() async throws {
            let output = try self.output.chosen()
            var pairs = [("by", by), ("tz", tz), ("app", app), ("source", source)].compactMap { name, value in value.map { (name, $0) } }
            pairs += try period.pairs(now: Date(), zone: tz.flatMap(TimeZone.init(identifier:)) ?? .gmt)
            if includeTest { pairs.append(("include_test", "true")) }
            if includeClientReported { pairs.append(("include_client_reported", "true")) }
            let query: AttributionReportQuery
            do throws(QueryProblem) { query = try AttributionReportQuery.parse(pairs) } catch {
                throw CLIFailure.usage(error.commandLineDescription)
            }
            print(output.render(try await database.open().attributions.report(query)), terminator: "")
        }
    }
}
