import CountersignServer
import ArgumentParser
import Foundation
import Store

/// The filters `report` and `export` share with `GET /v1/reports` and `GET /v1/conversions`: the period (relative
/// dates resolved in the report's zone), the time zone and every dimension a postback can be picked by.
struct ReportFilterOptions: ParsableArguments {
    @OptionGroup var period: PeriodOptions
    @Option(help: "IANA time zone of day and week buckets and of dates without a zone (default: the --app's registered zone, else UTC).") var tz: String?
    @Option(help: "arrival (the day postbacks arrived, default) or install (the estimated install day): which day --from, --to and day are of.") var basis: String?
    @Option(help: "The advertised app's id.") var app: String?
    @Option(name: .customLong("ad-network"), help: "An ad network id.") var adNetwork: String?
    @Option(name: .customLong("source-prefix"), help: "Source identifiers starting with these digits.") var sourcePrefix: String?
    @Option(help: "download, redownload, re-engagement or install.") var type: String?
    @Option(help: "0, 1 or 2.") var window: String?
    @Option(name: .customLong("did-win"), help: "true or false.") var didWin: String?
    @Option(help: "click or view.") var interaction: String?
    @Option(help: "A two-letter country code (an unsigned field).") var country: String?
    @Option(help: "production or development.") var environment: String?
    @Option(help: "The lowest tier the fields allow, 0-3.") var tier: String?
    @Option(name: .customLong("protocol"), help: "aak or skan.") var family: String?
    @Option(help: "An ISO 4217 currency code: postbacks whose revenue is in it.") var currency: String?
    @Flag(name: .customLong("include-uncounted"), help: "Include unverifiable and development postbacks.") var includeUncounted = false

    /// The query these filters (and `by`) ask for; one registered app without `--tz` counts days in its own zone. A
    /// bad value is a one-line usage error naming its option.
    func query(_ store: StoreDatabase, by: String? = nil) async throws -> ReportQuery {
        var pairs: [(String, String)] = []
        let options: [(String, String?)] = [
            ("by", by), ("tz", tz), ("basis", basis), ("app", app), ("ad_network", adNetwork), ("source_prefix", sourcePrefix),
            ("type", type), ("window", window), ("did_win", didWin), ("interaction", interaction), ("country", country),
            ("environment", environment), ("tier", tier), ("protocol", family), ("currency", currency),
        ]
        for (name, value) in options { if let value { pairs.append((name, value)) } }
        if includeUncounted { pairs.append(("include_uncounted", "true")) }
        pairs += try await period.pairs(tz: tz, app: app, store: store)
        do { return try ReportQuery.parse(pairs) } catch { throw CLIFailure.usage(error.commandLineDescription) }
    }
}
