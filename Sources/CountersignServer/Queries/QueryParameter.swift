import Foundation
import JWS
import Postback
import Store

/// Report parameters as the HTTP API and the CLI name them (`from`, `tz`, `app`, `by`, ...), parsed once, at the edge,
/// into the store's typed queries; the store never sees a parameter's text. The same messages everywhere: a 400's
/// `bad_parameter`, or the CLI's usage error naming its option.
package enum QueryParameter {
    /// An ISO 8601 date or time; without a zone it is wall-clock time in `zone`.
    static func time(_ name: String, _ value: String, in zone: ReportTimeZone) throws(QueryProblem) -> Date {
        guard let date = Timestamp.parse(value, assuming: zone.zone) else {
            throw QueryProblem(parameter: name, message: "must be a date or time such as 2026-11-01, 2026-11-01T08:30 (\(zone.identifier)) or 2026-11-01T10:30+02:00")
        }
        return date
    }

    /// An IANA time zone name.
    static func timeZone(_ name: String, _ value: String) throws(QueryProblem) -> ReportTimeZone {
        guard let zone = ReportTimeZone(identifier: value) else {
            throw QueryProblem(parameter: name, message: "must be an IANA time zone name such as UTC, Europe/Berlin or America/New_York")
        }
        return zone
    }

    /// An ad network id filter (as postbacks' `ad-network-id` is checked), or nil for an empty value (any network).
    static func adNetwork(_ name: String, _ value: String) throws(QueryProblem) -> String? {
        guard !value.isEmpty else { return nil }
        guard isAdNetworkID(value) else {
            throw QueryProblem(parameter: name, message: "must be a lowercase ad network id such as example123.skadnetwork or com.apple.ads")
        }
        return value
    }

    /// A numeric App Store id.
    static func app(_ name: String, _ value: String) throws(QueryProblem) -> AppID {
        guard let app = AppID(value) else { throw QueryProblem(parameter: name, message: "must be a numeric App Store id") }
        return app
    }

    /// `aak` or `skan`.
    static func family(_ name: String, _ value: String) throws(QueryProblem) -> PostbackProtocol {
        guard let family = PostbackProtocol(rawValue: value) else { throw QueryProblem(parameter: name, message: "must be aak or skan") }
        return family
    }

    /// A conversion window, 0 to 2.
    static func window(_ name: String, _ value: String) throws(QueryProblem) -> Int {
        guard let window = Int(value), (0...2).contains(window) else { throw QueryProblem(parameter: name, message: "must be 0, 1 or 2") }
        return window
    }

    /// `production` or `development`.
    static func environment(_ name: String, _ value: String) throws(QueryProblem) -> String {
        guard ["production", "development"].contains(value) else { throw QueryProblem(parameter: name, message: "must be production or development") }
        return value
    }

    /// `true`, `false`, `1` or `0`.
    static func flag(_ name: String, _ value: String) throws(QueryProblem) -> Bool {
        guard let flag = ["true": true, "false": false, "1": true, "0": false][value] else { throw QueryProblem(parameter: name, message: "must be true or false") }
        return flag
    }

    /// A comma-separated list of dimensions appended to `existing`, each once.
    static func dimensions<D: RawRepresentable & CaseIterable & Equatable>(_ name: String, _ value: String, adding existing: [D]) throws(QueryProblem) -> [D] where D.RawValue == String {
        var dimensions = existing
        for item in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            guard let dimension = D(rawValue: item) else {
                let known = D.allCases.map(\.rawValue)
                let hint = EditDistance.nearest(to: item, in: known).map { "; did you mean \($0)?" } ?? ""
                throw QueryProblem(parameter: name, message: "unknown dimension \"\(item)\"\(hint); use \(known.joined(separator: ", "))")
            }
            if !dimensions.contains(dimension) { dimensions.append(dimension) }
        }
        return dimensions
    }

    /// The `from` and `to` parameters among `times`, read in `zone` once every parameter is known (wherever `tz`
    /// comes). A `to` at or before `from` is an empty range: the answer has no rows.
    static func range(_ times: [(String, String)], in zone: ReportTimeZone) throws(QueryProblem) -> (from: Date?, to: Date?) {
        var range: (from: Date?, to: Date?) = (nil, nil)
        for (name, value) in times {
            let time = try time(name, value, in: zone)
            if name == "from" { range.from = time } else { range.to = time }
        }
        return range
    }
}


/// A query over a period in a time zone: what every report takes first.
package protocol PeriodQuery {
    var from: Date? { get set }
    var to: Date? { get set }
    var timeZone: ReportTimeZone { get set }
    init()
}

extension ReportQuery: PeriodQuery {}
extension IntakeQuery: PeriodQuery {}
extension PerformanceQuery: PeriodQuery {}
extension AttributionReportQuery: PeriodQuery {}

extension QueryParameter {
    /// Reads `parameters` into a new query: `tz`, then `from` and `to` in that zone wherever `tz` comes, and every other
    /// name through `read`, which answers false for a name the query does not take (refused unless in `extraAllowed`).
    static func parse<Query: PeriodQuery>(_ parameters: [(String, String)], extraAllowed: Set<String>,
                                          _ read: (inout Query, String, String) throws(QueryProblem) -> Bool) throws(QueryProblem) -> Query {
        var query = Query()
        var times: [(String, String)] = []
        for (name, value) in parameters {
            switch name {
            case "from", "to": times.append((name, value))
            case "tz": query.timeZone = try timeZone(name, value)
            default:
                if try read(&query, name, value) || extraAllowed.contains(name) { continue }
                throw QueryProblem(parameter: name, message: "unknown parameter")
            }
        }
        (query.from, query.to) = try range(times, in: query.timeZone)
        return query
    }
}

extension ReportQuery {
    /// Parses name/value parameters (`from`, `to`, `tz`, `basis`, `app`, `ad_network`, `source_prefix`, `type`, `window`,
    /// `did_win`, `interaction`, `country`, `environment`, `tier`, `protocol`, `currency`, `include_uncounted`, `by`).
    /// Unknown names are refused.
    package static func parse(_ parameters: [(String, String)], extraAllowed: Set<String> = []) throws(QueryProblem) -> ReportQuery {
        var query = try QueryParameter.parse(parameters, extraAllowed: extraAllowed) { (query: inout ReportQuery, name, value) throws(QueryProblem) in
            func fail(_ message: String) -> QueryProblem { QueryProblem(parameter: name, message: message) }
            switch name {
            case "app": query.app = try QueryParameter.app(name, value)
            case "ad_network": query.adNetwork = try QueryParameter.adNetwork(name, value)
            case "source_prefix":
                guard (1...4).contains(value.count), value.allSatisfy({ $0.isASCII && $0.isNumber }) else { throw fail("must be 1 to 4 digits") }
                query.sourcePrefix = value
            case "type":
                guard ["download", "redownload", "re-engagement", "reengagement", "install"].contains(value) else {
                    throw fail("must be download, redownload, re-engagement or install")
                }
                query.conversionType = value
            case "window": query.window = try QueryParameter.window(name, value)
            case "did_win":
                query.didWin = try QueryParameter.flag(name, value)
            case "interaction":
                guard ["click", "view"].contains(value) else { throw fail("must be click or view") }
                query.interaction = value
            case "country":
                guard value.count == 2, value.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw fail("must be a two-letter country code") }
                query.country = value.uppercased()
            case "environment": query.environment = try QueryParameter.environment(name, value)
            case "tier":
                guard let tier = Int(value), (0...3).contains(tier) else { throw fail("must be 0 to 3") }
                query.tier = tier
            case "currency":
                guard CurrencyCode.isKnown(value.uppercased()) else { throw fail("must be an ISO 4217 currency code such as USD") }
                query.currency = value.uppercased()
            case "protocol": query.family = try QueryParameter.family(name, value)
            case "include_uncounted":
                query.includeUncounted = try QueryParameter.flag(name, value)
            case "basis":
                guard let basis = DayBasis(rawValue: value) else { throw fail("must be arrival or install") }
                query.basis = basis
            case "by": query.groupBy = try QueryParameter.dimensions(name, value, adding: query.groupBy)
            default: return false
            }
            return true
        }
        if query.environment == "development" {
            // Development postbacks are never counted: asking for them is asking for postbacks that are not counted.
            query.includeUncounted = true
        }
        return query
    }
}

extension IntakeQuery {
    /// Parses `from`, `to`, `tz`, `app`, `ad_network`, `protocol`, `environment`, `window`, `status` and `by`; unknown names are
    /// refused unless in `extraAllowed`.
    package static func parse(_ parameters: [(String, String)], extraAllowed: Set<String> = []) throws(QueryProblem) -> IntakeQuery {
        try QueryParameter.parse(parameters, extraAllowed: extraAllowed) { (query: inout IntakeQuery, name, value) throws(QueryProblem) in
            func fail(_ message: String) -> QueryProblem { QueryProblem(parameter: name, message: message) }
            switch name {
            case "app": query.app = try QueryParameter.app(name, value)
            case "ad_network": query.adNetwork = try QueryParameter.adNetwork(name, value)
            case "protocol": query.family = try QueryParameter.family(name, value)
            case "environment": query.environment = try QueryParameter.environment(name, value)
            case "window": query.window = try QueryParameter.window(name, value)
            case "status":
                guard let status = Status(rawValue: value) else {
                    throw fail("must be one of \(Status.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                query.status = status
            case "by": query.groupBy = try QueryParameter.dimensions(name, value, adding: query.groupBy)
            default: return false
            }
            return true
        }
    }
}

extension PerformanceQuery {
    /// Parses `from`, `to`, `tz`, `app`, `ad_network`, `campaign`, `country`, `by`, `currency`, `basis`; refuses others.
    package static func parse(_ parameters: [(String, String)], extraAllowed: Set<String> = []) throws(QueryProblem) -> PerformanceQuery {
        try QueryParameter.parse(parameters, extraAllowed: extraAllowed) { (query: inout PerformanceQuery, name, value) throws(QueryProblem) in
            func fail(_ message: String) -> QueryProblem { QueryProblem(parameter: name, message: message) }
            switch name {
            case "app": query.app = try QueryParameter.app(name, value)
            case "ad_network": query.adNetwork = try QueryParameter.adNetwork(name, value)
            case "campaign":
                guard (1...64).contains(value.count), !LabelText.hasRefused(value) else {
                    throw fail("must be 1 to 64 characters without \(LabelText.refusedKinds)")
                }
                query.campaign = value
            case "country":
                guard value.count == 2, value.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw fail("must be a two-letter country code") }
                query.country = value.uppercased()
            case "by": query.groupBy = try QueryParameter.dimensions(name, value, adding: query.groupBy)
            case "currency":
                guard CurrencyCode.isKnown(value.uppercased()) else { throw fail("must be an ISO 4217 currency code such as USD") }
                query.currency = value.uppercased()
            case "basis":
                guard let basis = Basis(rawValue: value) else { throw fail("must be install or arrival") }
                query.basis = basis
            default: return false
            }
            return true
        }
    }
}

extension CohortCurveReader {
    /// Parses the cohort curves' parameters: the performance report's, but `basis` (cohorts are install days) and
    /// dimensions other than ``CohortCurveReader/dimensions``.
    package static func query(_ parameters: [(String, String)], extraAllowed: Set<String> = []) throws(QueryProblem) -> PerformanceQuery {
        if parameters.contains(where: { $0.0 == "basis" }) {
            throw QueryProblem(parameter: "basis", message: "cohorts are always by install day; leave basis out")
        }
        let query = try PerformanceQuery.parse(parameters, extraAllowed: extraAllowed)
        if let other = query.groupBy.first(where: { !dimensions.contains($0) }) {
            throw QueryProblem(parameter: "by", message: "\(other.rawValue) is not a cohort dimension; use \(dimensions.map(\.rawValue).joined(separator: ", "))")
        }
        return query
    }
}

extension AttributionReportQuery {
    /// Parses `by`, `from`, `to`, `tz`, `app`, `source`, `include_test` and `include_client_reported`; unknown names are
    /// refused unless in `extraAllowed`.
    package static func parse(_ parameters: [(String, String)], extraAllowed: Set<String> = []) throws(QueryProblem) -> AttributionReportQuery {
        try QueryParameter.parse(parameters, extraAllowed: extraAllowed) { (query: inout AttributionReportQuery, name, value) throws(QueryProblem) in
            switch name {
            case "app": query.app = value
            case "source":
                guard ["adservices", "iad"].contains(value) else { throw QueryProblem(parameter: name, message: "must be adservices or iad") }
                query.source = value
            case "include_test": query.includeTest = try QueryParameter.flag(name, value)
            case "include_client_reported": query.includeClientReported = try QueryParameter.flag(name, value)
            case "by": query.groupBy = try QueryParameter.dimensions(name, value, adding: query.groupBy)
            default: return false
            }
            return true
        }
    }
}
