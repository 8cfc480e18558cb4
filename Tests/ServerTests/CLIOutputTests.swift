import ArgumentParser
import Foundation
import JWS
import Postback
import Store
import Testing
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// The CLI in a terminal (issue 27, item 3): metric columns chosen with `--metrics`, a compact table that fits 120
/// columns, dates relative to today, and `--format` on every command that lists rows.
@Suite struct CLIOutputTests {
    static let now = Timestamp.parse("2026-11-25T23:30:00Z")!

    @Test func relativeDaysAreDaysInTheReportsZone() throws {
        let utc = TimeZone(identifier: "UTC")!
        #expect(RelativeDay.resolve("today", now: Self.now, zone: utc) == "2026-11-25")
        #expect(RelativeDay.resolve("Yesterday", now: Self.now, zone: utc) == "2026-11-24")
        #expect(RelativeDay.resolve("7d", now: Self.now, zone: utc) == "2026-11-18")
        #expect(RelativeDay.resolve("-30d", now: Self.now, zone: utc) == "2026-10-26")
        #expect(RelativeDay.resolve("4w", now: Self.now, zone: utc) == "2026-10-28")
        // 23:30 UTC is already the next day in Berlin.
        #expect(RelativeDay.resolve("today", now: Self.now, zone: TimeZone(identifier: "Europe/Berlin")!) == "2026-11-26")
        for text in ["2026-11-01", "2026", "7", "7x", "d", "", "-", "1234567d", "7 d", "٧d"] {
            #expect(RelativeDay.resolve(text, now: Self.now, zone: utc) == nil, "\(text)")
        }
    }

    @Test func lastIsTheLastDaysWithTodayAndReplacesFromAndTo() throws {
        let utc = TimeZone(identifier: "UTC")!
        let last = try PeriodOptions.parse(["--last", "7d"]).pairs(now: Self.now, zone: utc)
        #expect(last.map(\.0) == ["from", "to"] && last.map(\.1) == ["2026-11-19", "2026-11-26"])
        // A leading dash is a date, not an option.
        let dashed = try PeriodOptions.parse(["--from", "-30d", "--to", "today"]).pairs(now: Self.now, zone: utc)
        #expect(dashed.map(\.1) == ["2026-10-26", "2026-11-25"])
        #expect(try PeriodOptions.parse(["--from", "2026-11-01T08:30"]).pairs(now: Self.now, zone: utc).map(\.1) == ["2026-11-01T08:30"])
        for arguments in [["--last", "7d", "--from", "yesterday"], ["--last", "0d"], ["--last", "week"]] {
            #expect(throws: CLIFailure.self, "\(arguments)") { try PeriodOptions.parse(arguments).pairs(now: Self.now, zone: utc) }
        }
    }

    /// Finding 13: `--last 4w` counts back whole days from today, so it can start mid-week; a relative period says on
    /// stderr which days, weekdays and zone it resolved to, and a period of weeks that does not start on a Monday says so.
    @Test func aRelativePeriodNamesItsDaysWeekdaysAndZone() throws {
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        // 23:30 UTC on the 25th is Thursday the 26th in Berlin: 4w is the 28 days from Friday 30 October.
        let weeks = try PeriodOptions.parse(["--last", "4w"])
        #expect(weeks.note(try weeks.pairs(now: Self.now, zone: berlin), zone: berlin)
            == "period: Fri 2026-10-30 to Thu 2026-11-26 in Europe/Berlin (28 days with today; 4w counts back from today, not calendar weeks: --from with a Monday gives whole weeks)")
        let days = try PeriodOptions.parse(["--last", "7d"])
        #expect(days.note(try days.pairs(now: Self.now, zone: berlin), zone: berlin) == "period: Fri 2026-11-20 to Thu 2026-11-26 in Europe/Berlin (7 days with today)")
        // Four weeks back from a Sunday starts on a Monday: whole weeks, nothing to warn of.
        let sunday = Timestamp.parse("2026-11-29T12:00:00Z")!, utc = TimeZone(identifier: "UTC")!
        #expect(weeks.note(try weeks.pairs(now: sunday, zone: utc), zone: utc) == "period: Mon 2026-11-02 to Sun 2026-11-29 in UTC (28 days with today)")
        let open = try PeriodOptions.parse(["--from", "7d"])
        #expect(open.note(try open.pairs(now: Self.now, zone: utc), zone: utc) == "period: from Wed 2026-11-18 in UTC")
        let relativeEnd = try PeriodOptions.parse(["--from", "2026-11-01", "--to", "today"])
        #expect(relativeEnd.note(try relativeEnd.pairs(now: Self.now, zone: utc), zone: utc) == "period: Sun 2026-11-01 to Tue 2026-11-24 in UTC")
        // A `--to` with a time is shown as given, not as the day before it.
        let timed = try PeriodOptions.parse(["--from", "7d", "--to", "2026-11-30T08:30"])
        #expect(timed.note(try timed.pairs(now: Self.now, zone: utc), zone: utc) == "period: Wed 2026-11-18 to before 2026-11-30T08:30 in UTC")
        // Dates written out are what the reader typed: nothing to say.
        let written = try PeriodOptions.parse(["--from", "2026-11-01", "--to", "2026-11-08"])
        #expect(written.note(try written.pairs(now: Self.now, zone: utc), zone: utc) == nil)
    }

    /// A month of trial traffic for the example game, with its claims imported: a copy of its own for each test, of
    /// one made by the CLI once per test process.
    static func trial() async throws -> String {
        let made = try await madeTrial.database()
        let database = Checkout.temporaryDirectory() + "/trial.sqlite"
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: made + suffix) {
            try FileManager.default.copyItem(atPath: made + suffix, toPath: database + suffix)
        }
        return database
    }

    private static let madeTrial = TrialDatabase()

    /// The trial database, made on first use.
    private actor TrialDatabase {
        private var made: String?

        func database() async throws -> String {
            if let made { return made }
            let directory = Checkout.temporaryDirectory()
            let database = directory + "/trial.sqlite"
            #expect(try await countersign(["keys", "generate", "--out", directory + "/key"]).status == 0)
            #expect(try await countersign(["schema", "upload", Checkout.root.appendingPathComponent("examples/schemas/game.json").path, "--database", database]).status == 0)
            let run = try await countersign(["simulate", "--signing-key", directory + "/key/private-key.pem", "--start", "2026-09-01", "--days", "30",
                                             "--seed", "4", "--database", database, "--claims-out", directory + "/claims.csv"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await countersign(["spend", "import", directory + "/claims.csv", "--database", database]).status == 0)
            made = database
            return database
        }
    }

    @Test func aTableFitsATerminalAndMetricsPickTheColumns() async throws {
        let database = try await Self.trial()
        for command in [["report", "--by", "campaign,window"], ["report", "--by", "app_name,campaign_name"], ["performance", "--by", "ad_network,campaign"]] {
            let result = try await countersign(command + ["--database", database])
            #expect(result.status == 0, "\(result.stderr)")
            let widest = result.stdout.split(separator: "\n").map(\.count).max() ?? 0
            #expect(widest <= 120 && widest > 40, "\(command): \(widest) columns")
        }
        let chosen = try await countersign(["report", "--by", "campaign", "--metrics", "revenue_mid,installs", "--format", "csv", "--database", database])
        #expect(chosen.stdout.hasPrefix("campaign,currency,revenue_mid,installs\r\n"), "\(chosen.stdout)")
        // Without --metrics, CSV has every metric; the compact table is a subset of it with the same figures.
        let every = try await countersign(["report", "--by", "campaign", "--format", "csv", "--database", database])
        #expect(every.stdout.split(separator: "\r\n").first?.split(separator: ",").count == 2 + ReportMetric.allCases.count)
        let all = try await countersign(["report", "--by", "campaign", "--metrics", "all", "--format", "csv", "--database", database])
        #expect(all.stdout == every.stdout)
        let unknown = try await countersign(["report", "--metrics", "installs,profit", "--database", database])
        #expect(unknown.status == 2)
        #expect(unknown.stderr == "countersign: --metrics: profit is not a metric; choose from \(ReportMetric.allCases.map(\.rawValue).joined(separator: ", ")), or all\n")
    }

    /// Issue 49, finding 13: a performance or cohorts table ends with a total row, the same report without dimensions
    /// (so its eCPI and ROAS are the whole's, not sums of rounded cells); CSV and JSON stay the rows alone.
    @Test func tablesEndWithATotalRow() async throws {
        let database = try await Self.trial()
        let csv = try await countersign(["performance", "--by", "ad_network,campaign", "--metrics", "installs,spend", "--format", "csv", "--database", database])
        let rows = csv.stdout.split(separator: "\r\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count > 1 && !rows.contains { $0.first == "total" })
        let whole = try await countersign(["performance", "--metrics", "installs,spend", "--format", "csv", "--database", database])
        let wholeRow = try #require(whole.stdout.split(separator: "\r\n").dropFirst().first).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        #expect(Int(wholeRow[1]) == rows.reduce(0) { $0 + (Int($1[3]) ?? 0) }, "the whole report's installs are the rows'")
        let table = try await countersign(["performance", "--by", "ad_network,campaign", "--metrics", "installs,spend", "--database", database])
        let last = try #require(table.stdout.split(separator: "\n").last { $0.hasPrefix("total") })
        #expect(last.split(separator: " ", omittingEmptySubsequences: true).map(String.init).contains(wholeRow[1]), "\(last)")
        let cohorts = try await countersign(["cohorts", "--by", "ad_network", "--database", database])
        #expect(cohorts.status == 0 && cohorts.stdout.split(separator: "\n").contains { $0.hasPrefix("total") }, "\(cohorts.stdout)")
    }

    @Test func relativeDatesGiveTheRowsOfTheDatesTheyName() async throws {
        let database = try await Self.trial()
        let today = String(Timestamp.format(Date()).prefix(10))
        let days = 90
        let start = String(Timestamp.format(Date().addingTimeInterval(-Double(days) * 86_400)).prefix(10))
        let relative = try await countersign(["report", "--by", "day", "--from", "-\(days)d", "--to", "today", "--format", "csv", "--database", database])
        let absolute = try await countersign(["report", "--by", "day", "--from", start, "--to", today, "--format", "csv", "--database", database])
        #expect(relative.status == 0 && absolute.status == 0, "\(relative.stderr)\(absolute.stderr)")
        #expect(relative.stdout == absolute.stdout)
        #expect(relative.stderr.hasPrefix("countersign: period: ") && !absolute.stderr.contains("period: "), "\(relative.stderr)")
        #expect(relative.stdout.split(separator: "\r\n").count > 2, "the trial's last weeks are within \(days) days")
        let both = try await countersign(["report", "--last", "7d", "--to", "today", "--database", database])
        #expect(both.status == 2 && both.stderr.split(separator: "\n").count == 1)
    }

    @Test func everyListingCommandTakesEveryFormat() async throws {
        let database = try await Self.trial()
        #expect(try await countersign(["apps", "set", "1108187390", "--name", "Game", "--database", database]).status == 0)
        #expect(try await countersign(["apikey", "create", "--name", "analyst", "--scope", "read,schemas", "--database", database]).status == 0)
        #expect(try await countersign(["forward", "set", "acme", "--url", "https://acme.example/postbacks", "--database", database]).status == 0)
        #expect(try await countersign(["names", "set", "--app", "1108187390", "--ad-network", "example123.skadnetwork", "--level", "campaign",
                                 "--digits", "10", "Launch", "--database", database]).status == 0)
        let listings: [([String], String)] = [
            (["apps", "list"], "app"), (["apikey", "list"], "id"), (["keys", "list"], "kid"), (["schema", "list"], "app"),
            (["schema", "history", "1108187390"], "app"), (["names", "networks"], "ad_network_id"),
            (["names", "list", "--app", "1108187390"], "ad_network_id"), (["forward", "rules"], "name"), (["spend", "imports"], "id"),
        ]
        for (command, first) in listings {
            let database = command.first == "keys" ? [] : ["--database", database]
            let table = try await countersign(command + database)
            #expect(table.status == 0 && table.stdout.hasPrefix(first + " "), "\(command): \(table.stdout)")
            let csv = try await countersign(command + database + ["--format", "csv"])
            #expect(csv.stdout.hasPrefix(first + ","), "\(command): \(csv.stdout)")
            let json = try await countersign(command + database + ["--format", "json"])
            guard case .array(let rows)? = try JSONParser.parse(Array(json.stdout.utf8)).object?["rows"] else { Issue.record("\(command): \(json.stdout)"); continue }
            #expect(!rows.isEmpty && rows.allSatisfy { $0.object?[first] != nil }, "\(command)")
            let ndjson = try await countersign(command + database + ["--format", "ndjson"])
            #expect(try ndjson.stdout.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) } == rows, "\(command)")
            let bad = try await countersign(command + database + ["--format", "yaml"])
            #expect(bad.status == 2 && bad.stderr == "countersign: --format must be table, csv, json or ndjson\n", "\(command): \(bad.stderr)")
        }
        // A list is one cell: comma-joined, and quoted in CSV.
        let keys = try await countersign(["apikey", "list", "--format", "csv", "--database", database])
        #expect(keys.stdout.contains(",\"read,schemas\","), "\(keys.stdout)")
    }
}

/// A performance table shows amounts and returns in cents and shares to a tenth of a percent; CSV and JSON keep every
/// figure exact (issue 49, finding 8: `914.710037`, an eCPI of `14.54086`).
@Suite struct PerformanceTableRoundingTests {
    @Test func tablesShowMoneyInCentsAndCountsAsTheyAre() {
        let table = ReportTable(columns: ["ad_network", "installs", "spend", "ecpi", "roas_mid", "install_ratio", "revenue_mid"],
                                rows: [[.string("x"), .number("5"), .number("914.710037"), .number("14.54086"), .number("21.6749"), .number("0.4666666"), .null],
                                       [.string("y"), .number("7"), .number("2769.6"), .number("0.005"), .number("3"), .number("1"), .number("60030.8")]],
                                timeZone: "Europe/Berlin")
        let rounded = PerformanceCommand.rounded(table)
        #expect(rounded.rows[0] == [.string("x"), .number("5"), .number("914.71"), .number("14.54"), .number("21.67"), .number("0.467"), .null])
        #expect(rounded.rows[1] == [.string("y"), .number("7"), .number("2769.60"), .number("0.01"), .number("3.00"), .number("1.000"), .number("60030.80")])
        #expect(rounded.timeZone == "Europe/Berlin")
    }
}
