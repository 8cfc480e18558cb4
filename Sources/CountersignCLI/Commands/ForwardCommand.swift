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
        abstract: "Relay stored, verified postbacks to partners: rules, templates, test deliveries, status, dead letters, retries.",
        discussion: """
        Each rule POSTs every stored, verified postback it matches to its URL: Apple's body byte for byte (template \
        original), or an enriched body its template makes. The postback's dedup key goes as Idempotency-Key, and the \
        rule's header (a partner's token) with it; delivery is retried with backoff for --max-age (default nine days) \
        before the entry becomes a dead letter. Running servers deliver; a rule applies to postbacks stored after it is set.
        Example: countersign forward set acme-mmp --url https://mmp.example/postbacks --ad-network example123.skadnetwork
        """,
        subcommands: [SetRule.self, Rules.self, Remove.self, TestRule.self, Templates.self, Template.self, Status.self, Entries.self, Retry.self, Backfill.self]
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
        @Option(help: "The delivery template: original (Apple's body byte for byte, a new rule's default) or another (countersign forward templates lists them). Left out, a rule keeps its template.") var template: String?
        @Option(help: "A header sent with every delivery, such as Authorization; its value is read from --secret-file.") var header: String?
        @Option(name: .customLong("secret-file"), help: "A file holding the header's value, the partner's secret (- reads standard input); stored, never shown.") var secretFile: String?
        @Flag(name: .customLong("no-header"), help: "Send no header from now on and delete the stored secret. Without --header or --no-header, the rule keeps its header.") var noHeader = false
        @OptionGroup var database: DatabaseOption

        /// What the options do to the rule's header.
        func headerChange() throws -> PartnerHeader.Change {
            if noHeader {
                guard header == nil, secretFile == nil else { throw CLIFailure.usage("--no-header goes without --header and --secret-file") }
                return .remove
            }
            guard let header else {
                guard secretFile == nil else { throw CLIFailure.usage("--secret-file needs --header, the header it is the value of") }
                return .keep
            }
            guard let secretFile else { throw CLIFailure.usage("--header needs --secret-file, a file holding its value (- for standard input)") }
            let bytes: Data
            if secretFile == "-" {
                bytes = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let read = FileManager.default.contents(atPath: secretFile) else {
                    throw CLIFailure.usage("--secret-file: cannot read \(secretFile)")
                }
                bytes = read
            }
            var value = String(decoding: bytes.prefix(8192), as: UTF8.self)
            while value.hasSuffix("\n") || value.hasSuffix("\r") { value.removeLast() }
            do { return .set(try PartnerHeader(name: header, value: value)) } catch {
                throw CLIFailure.usage(error.field == "header" ? "--header: \(error.message)" : "--secret-file: \(error.message)")
            }
        }

        func run() async throws {
            var rule = ForwardRule(name: name, url: url, adNetwork: adNetwork, app: app, concurrency: concurrency, rate: rate,
                                   maximumAge: maximumAge, timeout: timeout, maximumEntries: maximumEntries, template: template ?? DeliveryTemplate.original)
            let headerChange = try headerChange()
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
            do {
                try await store.forwarding.set(rule, header: headerChange, keepTemplate: template == nil, maximumRules: maximumRules)
            } catch let problem as ForwardRule.Problem {
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

    struct TestRule: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Send one test delivery through a rule's template and header, and show what the partner answered.",
            discussion: """
            The newest stored postback the rule matches is sent as the rule would send it, marked as a test (the body's \
            "countersign-test": true, the header Countersign-Test: true, and an Idempotency-Key starting test-). Nothing is \
            queued or counted. Exit 0 when the partner answered 2xx, 1 otherwise.
            Example: countersign forward test acme-mmp
            """
        )
        @Argument(help: "The rule's name.") var name: String
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let store = try database.open()
            defer { store.close() }
            let delivery: ForwardDelivery?
            do { delivery = try await store.forwarding.testDelivery(rule: name) } catch let refusal as ForwardingOutbox.Refusal {
                throw CLIFailure.rejected(refusal.description)
            }
            guard let delivery else { throw CLIFailure.rejected("no forwarding rule is named \(name); countersign forward rules lists them") }
            let exchange = await TestDelivery.send(delivery)
            print(JSONValue.object(exchange).prettyPrinted)
            guard exchange["accepted"] == .bool(true) else {
                throw CLIFailure.rejected("the partner did not accept the test: \(exchange["error"]?.string ?? "no answer"); the answer is printed above")
            }
        }
    }

    struct Templates: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the delivery templates rules can name (shipped ones and your own), or with --fields the facts a template can send.",
            discussion: "Example: countersign forward templates --fields"
        )
        @Flag(help: "List the facts a template can put under a partner's key, with what each holds.") var fields = false
        @OptionGroup var output: OutputOption
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let output = try self.output.chosen()
            if fields {
                let rows = DeliveryField.allCases.map { field in
                    JSONObject([JSONMember(key: "fact", value: .string(field.rawValue)), JSONMember(key: "type", value: .string(field.kind.rawValue)),
                                JSONMember(key: "holds", value: .string(field.definition))])
                }
                print(output.render(ReportTable(objects: rows)), terminator: "")
                return
            }
            let store = try database.open()
            defer { store.close() }
            let rows = try await store.deliveryTemplates.all().map { listed in
                JSONObject([JSONMember(key: "template", value: .string(listed.template.name)), JSONMember(key: "shipped", value: .bool(listed.shipped)),
                            JSONMember(key: "apple_fields", value: .bool(listed.template.appleFields)),
                            JSONMember(key: "fields", value: .number(String(listed.template.fields.count))),
                            JSONMember(key: "source", value: .string(listed.template.source))])
            }
            print(output.render(ReportTable(objects: rows)), terminator: "")
        }
    }

    struct Template: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show, add or remove a delivery template (a JSON file; docs/operations.md#delivery-templates).",
            subcommands: [Show.self, Set.self, Remove.self]
        )

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Print a template as a file (a start for one of your own).",
                                                            discussion: "Example: countersign forward template show appmetrica > mine.json")
            @Argument(help: "The template's name.") var name: String
            @OptionGroup var database: DatabaseOption

            func run() async throws {
                let store = try database.open()
                defer { store.close() }
                guard let template = try await store.deliveryTemplates.named(name) else {
                    throw CLIFailure.rejected("no delivery template is named \(name); countersign forward templates lists them")
                }
                print(JSONValue.object(template.json).prettyPrinted)
            }
        }

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Add a template of your own from a file, or replace it; rules naming it use it from their next delivery.",
                                                            discussion: "Example: countersign forward template set mine.json")
            @Argument(help: "The template file.") var file: String
            @OptionGroup var database: DatabaseOption

            func run() async throws {
                guard let bytes = FileManager.default.contents(atPath: file) else { throw CLIFailure.usage("cannot read \(file)") }
                let store = try database.open(create: true)
                defer { store.close() }
                do {
                    let template = try await store.deliveryTemplates.set(file: Array(bytes))
                    print("template \(template.name) set: \(template.fields.count) fields\(template.appleFields ? " beside Apple's" : "")")
                } catch let problem as DeliveryTemplate.Problem {
                    throw CLIFailure.rejected("\(file): \(problem.description)")
                } catch let refusal as DeliveryTemplateStore.Refusal {
                    throw CLIFailure.rejected(refusal.description)
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove a template of your own that no rule names.")
            @Argument(help: "The template's name.") var name: String
            @OptionGroup var database: DatabaseOption

            func run() async throws {
                let store = try database.open()
                defer { store.close() }
                do {
                    guard try await store.deliveryTemplates.remove(name) else {
                        throw CLIFailure.rejected("no template of your own is named \(name); countersign forward templates lists them")
                    }
                } catch let refusal as DeliveryTemplateStore.Refusal {
                    throw CLIFailure.rejected(refusal.description)
                }
                print("removed \(name)")
            }
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
