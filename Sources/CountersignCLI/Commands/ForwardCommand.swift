import CountersignServer
import ArgumentParser
import Foundation
import JWS
import Postback
import Store

/// `countersign forward`: rules that relay verified postbacks to partners, the outbox's status, dead letters and retries.
struct ForwardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forward",
        abstract: "Relay stored, verified postbacks to partners: rules, status, dead letters, retries.",
        discussion: """
        Each rule POSTs the original body of every stored, verified postback it matches to its URL, with the postback's \
        dedup key as Idempotency-Key, retrying with backoff for --max-age (default nine days) before the entry becomes a \
        dead letter. Running servers deliver; a rule applies to postbacks stored after it is set.
        Example: countersign forward set acme-mmp --url https://mmp.example/postbacks --ad-network example123.skadnetwork
        """,
        subcommands: [SetRule.self, Rules.self, Remove.self, Status.self, Entries.self, Retry.self, Backfill.self]
    )

    struct SetRule: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Add a forwarding rule, or replace one.")
        @Argument(help: "The rule's name (the partner): a-z, 0-9, '.', '_' and '-'.") var name: String
        @Option(help: "Where each postback is POSTed (http or https).") var url: String
        @Option(name: .customLong("ad-network"), help: "Only postbacks of this ad network id.") var adNetwork: String?
        @Option(help: "Only postbacks of this app (App Store id).") var app: AppID?
        @Option(name: .customLong("protocol"), help: "Only aak or skan postbacks.") var postbackProtocol: String?
        @Option(help: "production (default), development or any.") var environment = ForwardRule.Environment.production.rawValue
        @Option(help: "Deliveries in flight at most, across every receiver (default 4).") var concurrency = 4
        @Option(help: "Deliveries started a second at most, across every receiver (default 50).") var rate = 50.0
        @Option(name: .customLong("max-age"), help: "Seconds a postback is retried before it becomes a dead letter (default 777600, nine days).") var maximumAge = ForwardRule.defaultMaximumAge
        @Option(help: "Seconds one delivery may take (default 10).") var timeout = 10.0
        @Option(name: .customLong("max-entries"), help: "Outbox entries the rule may hold; while full, new postbacks are not queued for it (default \(ForwardRule.defaultMaximumEntries)).") var maximumEntries = ForwardRule.defaultMaximumEntries
        @Option(name: .customLong("max-rules"), help: "Refuse a new rule when this many exist (default \(ServerSettings().forwardMaxRules), as serve's --forward-max-rules).") var maximumRules = ServerSettings().forwardMaxRules
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            var rule = ForwardRule(name: name, url: url, adNetwork: adNetwork, app: app, concurrency: concurrency, rate: rate,
                                   maximumAge: maximumAge, timeout: timeout, maximumEntries: maximumEntries)
            if let postbackProtocol {
                guard let value = PostbackProtocol(rawValue: postbackProtocol) else { throw CLIFailure.usage("--protocol must be aak or skan") }
                rule.postbackProtocol = value
            }
            guard let environment = ForwardRule.Environment(rawValue: environment) else {
                throw CLIFailure.usage("--environment must be one of \(ForwardRule.Environment.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            rule.environment = environment
            let store = try database.open(create: true)
            defer { store.close() }
            do { try await store.forwarding.set(rule, maximumRules: maximumRules) } catch let problem as ForwardRule.Problem {
                let flag = ["ad_network": "ad-network", "max_age": "max-age", "max_entries": "max-entries"][problem.field] ?? problem.field
                throw CLIFailure.usage("--\(flag): \(problem.message)")
            } catch let refusal as ForwardingOutbox.Refusal {
                throw CLIFailure.rejected(refusal.description.replacingOccurrences(of: "--forward-max-rules", with: "--max-rules"))
            }
            let stored = try await store.forwarding.rules().first { $0.name == name }
            print(JSONValue.object(stored?.json ?? rule.json).prettyPrinted)
        }
    }

    struct Rules: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the forwarding rules.")
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            print(output.render(ReportTable(objects: try await store.forwarding.rules().map(\.json))), terminator: "")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a forwarding rule; one with undelivered entries only with --drop-entries.")
        @Argument(help: "The rule's name.") var name: String
        @Flag(name: .customLong("drop-entries"), help: "Also drop the entries not delivered yet (postbacks the partner will not get).") var dropEntries = false
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            let removed: Int?
            do { removed = try await store.forwarding.remove(name, dropEntries: dropEntries) } catch let refusal as ForwardingOutbox.Refusal {
                throw CLIFailure.rejected(refusal.description)
            }
            guard let dropped = removed else {
                throw CLIFailure.rejected("no forwarding rule is named \(name); countersign forward rules lists them")
            }
            print("removed \(name) and \(dropped) undelivered entries")
        }
    }

    struct Backfill: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue the stored, verified postbacks a rule matches that it has not queued: those stored while it was full, or before it existed.",
            discussion: "Example: countersign forward backfill acme-mmp --since 2026-11-20 (forward status shows since when a rule is full)"
        )
        @Argument(help: "The rule's name.") var name: String
        @Option(help: "Postbacks stored at or after this date or time (UTC unless it says otherwise).") var since: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            guard let start = Timestamp.parse(since) else { throw CLIFailure.usage("--since: must be a date or time such as 2026-11-20 or 2026-11-20T08:00:00Z") }
            let store = try database.open()
            defer { store.close() }
            guard let queued = try await store.forwarding.backfill(partner: name, since: start) else {
                throw CLIFailure.rejected("no forwarding rule is named \(name); countersign forward rules lists them")
            }
            print("\(queued) postbacks queued for \(name); running servers deliver them")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Per partner: entries pending and in flight, dead letters, deliveries made, the oldest wait, the last failure.",
            discussion: "Example: countersign forward status --database data/countersign.sqlite"
        )
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            let store = try database.open()
            defer { store.close() }
            let status = try await store.forwarding.status()
            if status.rows.isEmpty, output == .table {
                FileHandle.standardError.write(Data("no forwarding rule; add one with countersign forward set NAME --url URL\n".utf8))
                return
            }
            print(output.render(status), terminator: "")
        }
    }

    struct Entries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List outbox entries: the dead letters (default) or those pending.",
            discussion: "Example: countersign forward list --state dead --partner acme-mmp"
        )
        @Option(help: "dead (default) or pending.") var state = ForwardEntryState.dead.rawValue
        @Option(help: "Only this rule's entries.") var partner: String?
        @Option(help: "Entries listed at most.") var limit = 100
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            guard let entryState = ForwardEntryState(rawValue: state) else {
                throw CLIFailure.usage("--state must be one of \(ForwardEntryState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let output = try self.output.chosen()
            guard limit > 0 else { throw CLIFailure.usage("--limit must be positive") }
            let store = try database.open()
            defer { store.close() }
            print(output.render(try await store.forwarding.entries(state: entryState, partner: partner, limit: limit)), terminator: "")
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters back in the queue, due now, with a fresh deadline.",
            discussion: "Example: countersign forward retry --partner acme-mmp (or --id 17 --id 18; neither: every dead letter)"
        )
        @Option(help: "Only this rule's dead letters.") var partner: String?
        @Option(name: .customLong("id"), help: "Only this entry (repeatable).") var ids: [Int64] = []
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            guard let retried = try await store.forwarding.retry(partner: partner, ids: ids) else {
                throw CLIFailure.rejected("no forwarding rule is named \(partner ?? ""); countersign forward rules lists them")
            }
            print("\(retried) dead letters queued again; running servers deliver them")
        }
    }
}
