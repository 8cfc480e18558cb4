import Foundation
import JWS
import Postback

/// Whether each app is set up right (issue 26, item 6): for each app, protocol, version, ad network and channel, the last
/// postback received, how many arrived and how they fared; and per app whether developer copies arrive. Read from
/// ``ArrivalLog``, never from the postbacks, with the counts this process has not written yet.
public struct SetupStatus: Sendable {
    let engine: any DatabaseEngine
    let tally: ArrivalTally

    /// Whether an app's developer copies arrive. Only a copy whose signature was checked with Apple's keys says they
    /// do: anyone can send a body naming the app to its copy domain with that `Host` (trust round 4, finding 7).
    public enum DeveloperCopies: String, Sendable, CaseIterable {
        case arriving
        case unverifiedOnly = "unverified_only"
        case none
        case notConfigured = "not_configured"

        /// What it means and what to do, in a developer's words (docs/setup.md).
        public var definition: String {
            switch self {
            case .arriving: "Copies signed with Apple's keys arrive at the app's copy domain; last_copy_at says when the last did."
            case .unverifiedOnly: "Bodies naming the app arrived at the copy domain but none passed the signature check: anyone can send these, so they do not show that Apple's copies arrive; if Apple's should be among them, check the keys and that the proxy passes bodies unchanged (docs/setup.md)."
            case .none: "A copy domain is registered but no copy arrived in the period: check the Info.plist keys, the domain's certificate and the proxy (docs/setup.md)."
            case .notConfigured: "No copy domain is registered for the app: countersign apps set ID --copy-domain example.com."
            }
        }
    }

    /// The columns of the status table, in order, each with what it counts.
    public static let columns: [(name: String, definition: String)] = [
        ("app", "The advertised app's App Store id."),
        ("app_name", "The app's name in the registry, else its id."),
        ("protocol", "aak or skan; empty for a refused body sent to /postbacks."),
        ("version", "The SKAdNetwork version; empty for AdAttributionKit and for bodies that failed verification (what they claim is not trusted)."),
        ("ad_network", "The ad network id (as claimed, for bodies that failed verification)."),
        ("channel", "developer_copy, direct or forwarded (docs/setup.md)."),
        ("last_received_at", "When the last of these arrived."),
        ("arrivals", "Requests that arrived, copies included."),
        ("verified", "Of those, signed with Apple's production keys."),
        ("development", "Signed with Apple's development keys (stored and never counted, or refused by the rules)."),
        ("unverifiable", "Kept, but signed with a key or in a version Countersign does not know yet."),
        ("invalid", "Refused: a bad signature or a malformed body."),
        ("refused", "Apple-signed but refused by the server's rules (an ad network not accepted, development not allowed)."),
        ("failing_share", "(unverifiable + invalid) / arrivals: the share failing verification. Anyone can raise it by sending bodies that name the app; verified counts only what Apple signed."),
    ]

    /// The fields of each app's summary (`apps` in the JSON, one line per app in the table), each with what it says.
    public static let summaryFields: [(name: String, definition: String)] = [
        ("copy_domain", "The domain registered for the app's developer copies (countersign apps set ID --copy-domain), or null."),
        ("developer_copies", "Whether the app's developer copies arrive (docs/setup.md)."),
        ("last_copy_at", "When the last developer copy signed with Apple's keys arrived in the period, or null: bodies that failed the signature check never set it."),
        ("verified_copies", "Developer copies in the period whose signature Apple's keys verified (production or development, counted or refused by the rules): only a body Apple signed for the app counts here, though whoever holds one (its ad network) can send it again."),
        ("unverified_copies", "Bodies naming the app that arrived at its copy domain in the period but were not verified (an unknown or bad signature, a malformed body): anyone can send these, and they never make copies arriving."),
        ("last_received_at", "When the last body naming the app arrived in the period, whatever its channel and outcome, or null."),
        ("arrivals", "Bodies naming the app that arrived in the period, every channel and outcome."),
        ("failing_share", "(unverifiable + invalid) / arrivals over every channel, or null without arrivals. Anyone can raise it by sending bodies that name the app: read it beside verified_copies."),
    ]

    /// One app's summary.
    public struct AppSummary: Sendable {
        public var app: AppID
        public var name: String?
        public var copyDomain: String?
        public var developerCopies: DeveloperCopies
        /// When the last developer copy signed with Apple's keys arrived in the period (never a body that failed the check).
        public var lastCopyAt: String?
        /// Developer copies in the period whose signature Apple's keys verified (stored or refused by the rules).
        public var verifiedCopies: Int
        /// Bodies naming the app at its copy domain in the period that could not be verified: anyone can send these.
        public var unverifiedCopies: Int
        /// When the last postback of any kind arrived in the period.
        public var lastReceivedAt: String?
        public var arrivals: Int
        public var failingShare: Double?

        /// The summary as JSON.
        public var json: JSONValue {
            .object(JSONObject([
                JSONMember(key: "app", value: .number(String(app))),
                JSONMember(key: "app_name", value: .string(name ?? String(app))),
                JSONMember(key: "copy_domain", value: copyDomain.map { .string($0) } ?? .null),
                JSONMember(key: "developer_copies", value: .string(developerCopies.rawValue)),
                JSONMember(key: "last_copy_at", value: lastCopyAt.map { .string($0) } ?? .null),
                JSONMember(key: "verified_copies", value: .number(String(verifiedCopies))),
                JSONMember(key: "unverified_copies", value: .number(String(unverifiedCopies))),
                JSONMember(key: "last_received_at", value: lastReceivedAt.map { .string($0) } ?? .null),
                JSONMember(key: "arrivals", value: .number(String(arrivals))),
                JSONMember(key: "failing_share", value: failingShare.map { .number(SetupStatus.share($0)) } ?? .null),
            ]))
        }

        /// One line for people: the app, whether copies arrive, and what to do.
        public var line: String {
            let label = name.map { "\(app) (\($0))" } ?? String(app)
            switch developerCopies {
            case .arriving:
                return "\(label): developer copies arriving at \(copyDomain ?? "?"), the last at \(lastCopyAt ?? "?") (\(verifiedCopies) signed by Apple, "
                    + "\(unverifiedCopies) not verified)"
            case .unverifiedOnly:
                return "\(label): no developer copy signed by Apple arrived at \(copyDomain ?? "?") in the period; \(unverifiedCopies) bodies naming the app "
                    + "arrived there but none passed the signature check (anyone can send these); check the keys and that the proxy passes bodies unchanged (docs/setup.md)"
            case .none: return "\(label): no developer copy arrived at \(copyDomain ?? "?") in the period; check the Info.plist keys, the certificate and the proxy (docs/setup.md)"
            case .notConfigured: return "\(label): no copy domain registered; countersign apps set \(app) --name NAME --copy-domain example.com"
            }
        }
    }

    /// The status since `since` (a day, UTC) of `app`, or of every registered app and every app seen; `visible` says
    /// which apps the caller may see.
    public func report(app: AppID?, since: Date, visible: @Sendable (AppID) -> Bool = { _ in true }) async throws -> (table: ReportTable, apps: [AppSummary]) {
        let day = String(Timestamp.format(since).prefix(10))
        let (rows, registered) = try await engine.read { db in
            var conditions = ["day >= ?"]
            var arguments: [any SQLValueConvertible] = [day]
            if let app { conditions.append("app = ?"); arguments.append(app) }
            let rows = try db.rows("""
                SELECT app, protocol, version, ad_network_id, channel, outcome, environment, sum(arrivals) AS arrivals, max(last_received_at) AS last_received_at
                FROM arrivals_daily WHERE \(conditions.joined(separator: " AND "))
                GROUP BY app, protocol, version, ad_network_id, channel, outcome, environment
                """, arguments)
            let registered = try db.rows("SELECT app, name, copy_domain FROM apps" + (app == nil ? "" : " WHERE app = ?"), app.map { [$0] } ?? [])
            return (rows, registered)
        }
        // `checked` and `lastChecked`: the arrivals whose signature Apple's keys verified (an environment is logged for
        // those only, refused by the rules or not); only they say developer copies arrive.
        struct Group { var last = "", lastChecked = "", arrivals = 0, checked = 0, verified = 0, development = 0, unverifiable = 0, invalid = 0, refused = 0 }
        var groups: [[String]: Group] = [:]
        var names: [AppID: String] = [:], domains: [AppID: String] = [:]
        for row in registered {
            let id = try row.get("app", as: AppID.self)
            names[id] = try row.get("name", as: String.self)
            domains[id] = try row.get("copy_domain", as: String?.self)
        }
        // The stored counts, and those this process holds in memory (the last second's).
        var counts: [(key: ArrivalLog.Key, arrivals: Int, last: String)] = try rows.map { row in
            (ArrivalLog.Key(day: day, app: try row.get("app"), family: try row.get("protocol"), version: try row.get("version"),
                            adNetwork: try row.get("ad_network_id"), channel: try row.get("channel"), outcome: try row.get("outcome"),
                            environment: try row.get("environment")),
             try row.get("arrivals", as: Int.self), try row.get("last_received_at", as: String.self))
        }
        for (key, entry) in tally.snapshot().entries where key.day >= day && (app == nil || key.app == app) {
            counts.append((key, entry.arrivals, entry.last))
        }
        for (key, count, last) in counts {
            let id = key.app
            guard visible(id) else { continue }
            let groupKey = [String(id), key.family, key.version, key.adNetwork, key.channel]
            var group = groups[groupKey] ?? Group()
            group.arrivals += count
            group.last = max(group.last, last)
            if !key.environment.isEmpty {
                group.checked += count
                group.lastChecked = max(group.lastChecked, last)
            }
            let development = key.environment == KeyEnvironment.development.rawValue
            switch key.outcome {
            case "verified": if development { group.development += count } else { group.verified += count }
            case "unverifiable": group.unverifiable += count
            case "refused": if development { group.development += count } else { group.refused += count }
            default: group.invalid += count
            }
            groups[groupKey] = group
        }
        let ordered = groups.keys.sorted { left, right in
            let (l, r) = (AppID(left[0]) ?? AppID(0), AppID(right[0]) ?? AppID(0))
            return l != r ? l < r : left.lexicographicallyPrecedes(right)
        }
        let table = ReportTable(columns: Self.columns.map(\.name), rows: ordered.map { key in
            let group = groups[key]!, id = AppID(key[0]) ?? AppID(0)
            return [.number(key[0]), .string(names[id] ?? key[0]), .string(key[1]), .string(key[2]), .string(key[3]), .string(key[4]),
                    .string(group.last), .number(String(group.arrivals)), .number(String(group.verified)), .number(String(group.development)),
                    .number(String(group.unverifiable)), .number(String(group.invalid)), .number(String(group.refused)),
                    .number(Self.share(Double(group.unverifiable + group.invalid) / Double(max(group.arrivals, 1))))]
        })
        var summaries: [AppSummary] = []
        for id in Set(names.keys).union(groups.keys.compactMap { AppID($0[0]) }).filter(visible).sorted() {
            let mine = groups.filter { $0.key[0] == String(id) }
            let copies = mine.filter { $0.key[4] == ArrivalChannel.developerCopy.rawValue }
            let arrivals = mine.values.reduce(0) { $0 + $1.arrivals }
            let failing = mine.values.reduce(0) { $0 + $1.unverifiable + $1.invalid }
            // Only a copy whose signature was checked says copies arrive: a Host header and a body naming the app are
            // anyone's to send.
            let verifiedCopies = copies.values.reduce(0) { $0 + $1.checked }
            let unverifiedCopies = copies.values.reduce(0) { $0 + $1.arrivals - $1.checked }
            let lastCopy = copies.values.map(\.lastChecked).filter { !$0.isEmpty }.max()
            let state: DeveloperCopies = domains[id] == nil ? .notConfigured
                : lastCopy != nil ? .arriving : unverifiedCopies > 0 ? .unverifiedOnly : .none
            summaries.append(AppSummary(app: id, name: names[id], copyDomain: domains[id], developerCopies: state, lastCopyAt: lastCopy,
                                        verifiedCopies: verifiedCopies, unverifiedCopies: unverifiedCopies,
                                        lastReceivedAt: mine.values.map(\.last).max(), arrivals: arrivals,
                                        failingShare: arrivals == 0 ? nil : Double(failing) / Double(arrivals)))
        }
        return (table, summaries)
    }

    /// A share with four decimals, as the reports write them.
    static func share(_ value: Double) -> String { String(format: "%.4f", value) }
}
