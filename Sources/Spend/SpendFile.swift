import CSV
import Foundation
import JWS
import Postback

/// What a network's export says it bought and what it claims, per day, app, ad network, campaign and country: the rows
/// that reconciliation and return on ad spend read (docs/metrics.md).
public struct SpendRow: Sendable, Equatable {
    /// The reporting day, `YYYY-MM-DD`, as the network reports it.
    public var day: String
    /// The advertised app's App Store id.
    public var app: AppID
    /// The ad network id, as in its postbacks.
    public var adNetwork: String
    /// The campaign as the file names it ("" for the whole network): matched to postbacks' campaign digits.
    public var campaign: String
    /// An ISO 3166 two-letter country, or "" for every country.
    public var country: String
    public var impressions: Int64?
    public var clicks: Int64?
    /// Installs the network claims it drove.
    public var claimedInstalls: Int64?
    /// Re-engagements the network claims it drove.
    public var claimedReEngagements: Int64?
    /// Spend in whole millionths of `currency`.
    public var spendMicros: Int64?
    /// The spend's ISO 4217 currency.
    public var currency: String?
    /// The line of the file the row came from.
    public var line: Int

    /// A row.
    public init(day: String, app: AppID, adNetwork: String, campaign: String = "", country: String = "", impressions: Int64? = nil,
                clicks: Int64? = nil, claimedInstalls: Int64? = nil, claimedReEngagements: Int64? = nil, spendMicros: Int64? = nil,
                currency: String? = nil, line: Int = 0) {
        self.day = day
        self.app = app
        self.adNetwork = adNetwork
        self.campaign = campaign
        self.country = country
        self.impressions = impressions
        self.clicks = clicks
        self.claimedInstalls = claimedInstalls
        self.claimedReEngagements = claimedReEngagements
        self.spendMicros = spendMicros
        self.currency = currency
        self.line = line
    }

    /// The key a file may hold once.
    public var key: String { "\(day)|\(app)|\(adNetwork)|\(campaign)|\(country)" }
}

/// The layouts Countersign reads: its own, and two networks' published report columns (docs/spend.md).
public enum SpendFormat: String, Sendable, CaseIterable {
    /// `date, app, ad_network, campaign, country, impressions, clicks, installs, re_engagements, spend, currency`.
    case generic
    /// AppLovin (Axon) Reporting API CSV: `day, campaign_store_id, campaign_id_external, country, impressions, clicks,
    /// installs, cost` (USD).
    case applovin
    /// Apple Ads reports: `date, adamId (or app id), campaignId, countryOrRegion, impressions, taps, totalInstalls,
    /// localSpend, currency`.
    case appleAds = "apple-ads"

    /// The canonical field each header name (lower case, letters and digits only) fills.
    var columns: [String: SpendField] {
        switch self {
        case .generic:
            ["date": .day, "day": .day, "app": .app, "appid": .app, "adnetwork": .adNetwork, "adnetworkid": .adNetwork,
             "campaign": .campaign, "campaignid": .campaign, "sourceidentifier": .campaign, "country": .country,
             "impressions": .impressions, "clicks": .clicks, "installs": .installs, "claimedinstalls": .installs,
             "reengagements": .reEngagements, "claimedreengagements": .reEngagements, "spend": .spend, "cost": .spend, "currency": .currency]
        case .applovin:
            ["day": .day, "date": .day, "campaignstoreid": .app, "campaignidexternal": .campaign, "country": .country,
             "impressions": .impressions, "clicks": .clicks, "installs": .installs, "cost": .spend, "currency": .currency]
        case .appleAds:
            ["date": .day, "day": .day, "adamid": .app, "appid": .app, "promotedobjectid": .app, "campaignid": .campaign,
             "countryorregion": .country, "impressions": .impressions, "taps": .clicks, "totalinstalls": .installs, "installs": .installs,
             "localspend": .spend, "localspendamount": .spend, "spend": .spend, "currency": .currency, "localspendcurrency": .currency]
        }
    }

    /// What the format fills in when the file does not say: the network's id, and its currency.
    var defaults: (adNetwork: String?, currency: String?) {
        switch self {
        case .generic: (nil, nil)
        // AppLovin's SKAdNetwork id; its Reporting API gives cost in US dollars.
        case .applovin: ("ludvb6z3bs.skadnetwork", "USD")
        case .appleAds: ("com.apple.ads", nil)
        }
    }
}

/// A column's meaning.
enum SpendField: String, CaseIterable {
    case day, app, adNetwork = "ad_network", campaign, country, impressions, clicks, installs, reEngagements = "re_engagements", spend, currency
}

/// What the importer is told beyond the file: values for columns the file lacks.
public struct SpendDefaults: Sendable, Equatable {
    public var app: AppID?
    public var adNetwork: String?
    public var currency: String?

    /// No defaults.
    public init(app: AppID? = nil, adNetwork: String? = nil, currency: String? = nil) {
        self.app = app
        self.adNetwork = adNetwork
        self.currency = currency
    }

    /// The first default that is not what it must be (`field`, then what it must be), or nil: a default is checked
    /// when it is given, whether or not the file needs it.
    public var problem: (field: String, message: String)? {
        if let app, app.number < 1 { return ("app", "must be an App Store id, a positive integer") }
        if let adNetwork, !isAdNetworkID(adNetwork) { return ("ad_network", "must be an ad network id such as example123.skadnetwork") }
        if let currency, !CurrencyCode.isKnown(currency) { return ("currency", "must be an ISO 4217 currency code in upper case, such as USD or EUR") }
        return nil
    }
}

/// Every problem of a file that is refused, each naming its line: a file imports whole or not at all.
public struct SpendFileProblems: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first problems, in line order.
    public let problems: [CSVProblem]
    /// How many problems there are in all.
    public let total: Int

    /// The first `problems` of `total`.
    public init(problems: [CSVProblem], total: Int) {
        self.problems = problems
        self.total = total
    }

    public var description: String {
        let shown = problems.prefix(10).map(\.description).joined(separator: "; ")
        return "\(total) problem\(total == 1 ? "" : "s"): \(shown)" + (total > 10 ? "; ..." : "")
    }
}

/// Reads a spend and claims file into rows, checking every line: a bad date, app, network, number, currency, a
/// negative amount or a row given twice is named with its line and column, and then nothing is imported.
public enum SpendFile {
    /// The most problems listed (all are counted).
    public static let problemsListed = 100

    /// The rows of `bytes`, or every problem found.
    public static func read(_ bytes: [UInt8], format: SpendFormat, defaults: SpendDefaults = SpendDefaults()) -> Result<[SpendRow], SpendFileProblems> {
        var problems: [CSVProblem] = []
        var total = 0
        func problem(_ line: Int, _ column: String?, _ message: String) {
            total += 1
            if problems.count < problemsListed { problems.append(CSVProblem(line: line, column: column, message: message)) }
        }
        var reader = CSVReader(bytes)
        let header: CSVReader.Record
        do {
            guard let first = try reader.next() else { return .failure(SpendFileProblems(problems: [CSVProblem(line: 1, message: "the file is empty; it needs a header line")], total: 1)) }
            header = first
        } catch {
            return .failure(SpendFileProblems(problems: [error], total: 1))
        }
        var columns: [SpendField: Int] = [:]
        for (index, name) in header.fields.enumerated() {
            let normal = String(name.lowercased().unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) })
            guard let field = format.columns[normal] else { continue }
            if columns[field] != nil { problem(1, name, "names the column \(field.rawValue) a second time") }
            columns[field] = index
        }
        let adNetworkDefault = defaults.adNetwork ?? format.defaults.adNetwork
        let currencyDefault = defaults.currency ?? format.defaults.currency
        for (field, message) in [(SpendField.day, "a date column (date or day)"), (.app, "an app column (app), or --app"),
                                 (.adNetwork, "an ad network column (ad_network), or --ad-network")] where columns[field] == nil {
            if field == .app, defaults.app != nil { continue }
            if field == .adNetwork, adNetworkDefault != nil { continue }
            problem(1, nil, "needs \(message); the \(format.rawValue) columns are \(Set(format.columns.values.map(\.rawValue)).sorted().joined(separator: ", "))")
        }
        if columns[.spend] != nil, columns[.currency] == nil, currencyDefault == nil {
            problem(1, nil, "has spend but no currency column; add one or give --currency")
        }
        guard total == 0 else { return .failure(SpendFileProblems(problems: problems, total: total)) }

        var rows: [SpendRow] = []
        var seen: [String: Int] = [:]
        // Days repeat on many lines; each is read once.
        var days: [String: String?] = [:]
        while true {
            let record: CSVReader.Record
            do {
                guard let next = try reader.next() else { break }
                record = next
            } catch {
                problem(error.line, nil, error.message)
                break
            }
            if record.fields.allSatisfy({ $0.allSatisfy(\.isWhitespace) }) { continue }
            func cell(_ field: SpendField) -> String? {
                guard let index = columns[field], index < record.fields.count else { return nil }
                let raw = record.fields[index]
                let text = raw.first?.isWhitespace == true || raw.last?.isWhitespace == true ? raw.trimmingCharacters(in: .whitespaces) : raw
                return text.isEmpty ? nil : text
            }
            var bad = false
            func fail(_ field: SpendField, _ message: String) {
                problem(record.line, field.rawValue, message)
                bad = true
            }
            func count(_ field: SpendField) -> Int64? {
                guard let text = cell(field) else { return nil }
                guard text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let value = Int64(text), value <= 1_000_000_000_000 else {
                    fail(field, "must be a whole number, 0 or more, got \(quoted(text))")
                    return nil
                }
                return value
            }
            var row = SpendRow(day: "", app: AppID(0), adNetwork: "", campaign: "", country: "", line: record.line)
            let dayText = cell(.day) ?? ""
            let normal: String?
            if let known = days[dayText] { normal = known } else {
                normal = Self.day(dayText)
                days[dayText] = normal
            }
            if let normal { row.day = normal } else { fail(.day, "must be a date such as 2026-11-20, got \(quoted(dayText))") }
            if let text = cell(.app) {
                if let app = AppID(text) { row.app = app } else {
                    fail(.app, "must be the numeric App Store id, got \(quoted(text))")
                }
            } else if let app = defaults.app { row.app = app } else { fail(.app, "is empty; every row needs the App Store id") }
            if let network = cell(.adNetwork) ?? adNetworkDefault {
                if isAdNetworkID(network) { row.adNetwork = network } else { fail(.adNetwork, "must be a lowercase ad network id such as example123.skadnetwork, got \(quoted(network))") }
            } else { fail(.adNetwork, "is empty; every row needs the ad network id") }
            if let campaign = cell(.campaign) {
                if campaign.count <= 64, !LabelText.hasRefused(campaign) { row.campaign = campaign } else {
                    fail(.campaign, "must be 1 to 64 characters without \(LabelText.refusedKinds)")
                }
            }
            if let country = cell(.country) {
                let upper = country.uppercased()
                if upper.count == 2, upper.allSatisfy({ $0.isASCII && $0.isLetter }) { row.country = upper } else { fail(.country, "must be a two-letter country code, got \(quoted(country))") }
            }
            row.impressions = count(.impressions)
            row.clicks = count(.clicks)
            row.claimedInstalls = count(.installs)
            row.claimedReEngagements = count(.reEngagements)
            if let spend = cell(.spend) {
                if spend.hasPrefix("-") { fail(.spend, "must not be negative, got \(quoted(spend))") } else if let micros = MoneyText.micros(spend) {
                    row.spendMicros = micros
                } else { fail(.spend, "must be an amount such as 1234.56 (a dot for decimals, at most six, no thousands separator), got \(quoted(spend))") }
                let currency = (cell(.currency) ?? currencyDefault)?.uppercased()
                if let currency, CurrencyCode.isKnown(currency) { row.currency = currency } else {
                    fail(.currency, "must be an ISO 4217 currency code such as USD, got \(quoted(cell(.currency) ?? ""))")
                }
            } else if let currency = cell(.currency), !CurrencyCode.isKnown(currency.uppercased()) {
                fail(.currency, "must be an ISO 4217 currency code such as USD, got \(quoted(currency))")
            }
            guard !bad else { continue }
            if let first = seen[row.key] {
                problem(record.line, nil, "repeats line \(first) (the same day, app, ad network, campaign and country); give each once")
                continue
            }
            seen[row.key] = record.line
            rows.append(row)
        }
        if total > 0 { return .failure(SpendFileProblems(problems: problems, total: total)) }
        if rows.isEmpty { return .failure(SpendFileProblems(problems: [CSVProblem(line: 2, message: "the file has a header but no rows")], total: 1)) }
        return .success(rows)
    }

    /// A day written `YYYY-MM-DD` (or `YYYY/MM/DD`, or a time after it), as `YYYY-MM-DD`; nil when it is no date.
    public static func day(_ text: String) -> String? {
        let head = String(text.prefix(10)).replacingOccurrences(of: "/", with: "-")
        guard text.count == 10 || text.dropFirst(10).first == "T" || text.dropFirst(10).first == " ", Timestamp.parse(head) != nil else { return nil }
        return head
    }

    /// `text` quoted for a message, cut after 40 characters.
    public static func quoted(_ text: String) -> String { "\"" + String(text.prefix(40)) + (text.count > 40 ? "…" : "") + "\"" }
}
