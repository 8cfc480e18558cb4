import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Postback
import Store

/// `countersign alerts`: rules that tell a webhook when postbacks stop, untrusted or valueless ones rise, claims outrun
/// what Apple signed, forwarding gives up or the value mix changes, and a daily digest; their status and retries.
struct AlertsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alerts",
        abstract: "Tell a webhook (generic JSON or Slack) when something changes: rules, readings, status, dead alerts, retries.",
        discussion: """
        Running servers check every rule every --alert-interval seconds (default 60) and POST an alert when a rule starts \
        firing and when it stops, and a digest once a day; delivery is retried with backoff for two days, with the same \
        Idempotency-Key on every attempt. docs/alerts.md says what each kind measures.
        Example: countersign alerts set installs-stopped --kind silence --app 1108187390 --hours 6 --format slack --url https://hooks.slack.com/services/T000/B000/secret
        """,
        subcommands: [SetRule.self, Rules.self, Remove.self, Check.self, Status.self, Retry.self]
    )

    struct SetRule: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Add an alert rule, or replace one (with a new condition it starts afresh).")
        @Argument(help: "The rule's name: a-z, 0-9, '.', '_' and '-'.") var name: String
        @Option(help: "What it watches: \(AlertKind.allCases.map(\.rawValue).joined(separator: ", ")).") var kind: String
        @Option(help: "The webhook alerts are POSTed to (http or https); shown as its scheme and host only.") var url: String
        @Option(help: "json (default): the alert as a JSON object; slack: {\"text\": ...} for an incoming webhook.") var format = AlertRule.Format.json.rawValue
        @Option(help: "Only this app (App Store id).") var app: AppID?
        @Option(name: .customLong("ad-network"), help: "Only this ad network id.") var adNetwork: String?
        @Option(help: "dead_letters: only this forwarding rule's.") var partner: String?
        @Option(help: "The window looked at, in hours (silence 6, untrusted_share, null_share and value_mix 24; value_mix at most 72).") var hours: Double?
        @Option(help: "The share (0 to 1) or, for dead_letters, the count that fires the rule (untrusted_share 0.05, null_share 0.5, claim_gap 0.3, value_mix 0.3, dead_letters 1).") var threshold: Double?
        @Option(help: "The fewest arrivals, installs or claims a share is judged on (default 20).") var minimum = 20
        @Option(help: "digest: the hour it is sent, 0-23 (default 8).") var hour = 8
        @Option(name: .customLong("tz"), help: "digest: the zone of its hour and of yesterday (default UTC).") var timeZone = "UTC"
        @Option(help: "digest: convert amounts into this currency with the imported rates.") var currency: String?
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            guard let kind = AlertKind(rawValue: kind) else {
                throw CLIFailure.usage("--kind must be one of \(AlertKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard let format = AlertRule.Format(rawValue: format) else { throw CLIFailure.usage("--format must be json or slack") }
            let rule = AlertRule(name: name, kind: kind, url: url, format: format, app: app, adNetwork: adNetwork, partner: partner, hours: hours,
                                 threshold: threshold, minimum: minimum, hour: hour, timeZone: timeZone, currency: currency)
            let store = try database.open(create: true)
            defer { store.close() }
            do {
                try await store.alerts.set(rule)
            } catch let problem as AlertRule.Problem {
                guard problem.field != "name" else { throw CLIFailure.usage("NAME: \(problem.message)") }
                let flag = ["ad_network": "ad-network", "time_zone": "tz"][problem.field] ?? problem.field
                throw CLIFailure.usage("--\(flag): \(problem.message)")
            } catch let refusal as AlertBook.Refusal {
                throw CLIFailure.rejected(refusal.description)
            }
            let stored = try await store.alerts.rules().first { $0.name == name }
            print(JSONValue.object(stored?.json ?? rule.json).prettyPrinted)
        }
    }

    struct Rules: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the alert rules.")
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            print(output.render(ReportTable(objects: try await store.alerts.rules().map(\.json))), terminator: "")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an alert rule and its undelivered alerts.")
        @Argument(help: "The rule's name.") var name: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard let dropped = try await store.alerts.remove(name) else {
                throw CLIFailure.rejected("no alert rule is named \(name); countersign alerts rules lists them")
            }
            print("removed \(name) and \(dropped) undelivered alerts")
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what a rule reads now and whether it would fire; nothing is sent (a digest shows yesterday's).",
            discussion: "Example: countersign alerts check installs-stopped"
        )
        @Argument(help: "The rule's name.") var name: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard let rule = try await store.alerts.rules().first(where: { $0.name == name }) else {
                throw CLIFailure.rejected("no alert rule is named \(name); countersign alerts rules lists them")
            }
            print(JSONValue.object(try await store.alerts.reading(rule).json).prettyPrinted)
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Per rule: firing or not and since when, the last check, alerts pending, dead, delivered and dropped, the last failure.",
            discussion: "Example: countersign alerts status"
        )
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            let status = try await store.alerts.status()
            if status.rows.isEmpty, output == .table {
                FileHandle.standardError.write(Data("no alert rule; add one with countersign alerts set NAME --kind KIND --url URL\n".utf8))
                return
            }
            print(output.render(status), terminator: "")
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead alerts back in the queue, due now, with a fresh deadline.",
            discussion: "Example: countersign alerts retry installs-stopped (no name: every dead alert)"
        )
        @Argument(help: "Only this rule's dead alerts.") var name: String?
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard let retried = try await store.alerts.retry(rule: name) else {
                throw CLIFailure.rejected("no alert rule is named \(name ?? ""); countersign alerts rules lists them")
            }
            print("\(retried) dead alerts queued again; running servers deliver them")
        }
    }
}
