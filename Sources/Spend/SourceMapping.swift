import CSV
import Foundation
import JWS
import Postback

/// What a source identifier of one app and ad network means from one UTC day to another, optionally in one country or
/// for one publisher: the network's campaign, ad group and creative, with their ids and names. Networks reuse their 2-4
/// digit identifiers, so a name keyed by digits alone would merge two campaigns; a postback is named by the mapping in
/// force on its estimated install day (docs/operations.md#dated-names).
public struct SourceMapping: Sendable, Equatable {
    /// The identifier as postbacks carry it: SKAdNetwork's `campaign-id` before 4.0 (`7`), else the 2-4 digit
    /// `source-identifier` or its leading digits (`12` names every `12xx`).
    public var sourceIdentifier: String
    /// An ISO 3166 country the mapping is limited to (Apple's `country-code`), or nil for every country.
    public var country: String?
    /// The publisher the mapping is limited to (the app or web domain that showed the ad), or nil for every one.
    public var publisher: String?
    /// The first day it is in force (UTC, `YYYY-MM-DD`).
    public var validFrom: String
    /// The last day it is in force (UTC, included), or nil while it lasts.
    public var validTo: String?
    public var campaignID: String
    public var campaignName: String?
    public var adGroupID: String?
    public var adGroupName: String?
    public var creativeID: String?
    public var creativeName: String?
    /// The file's line it came from (0 when set otherwise), for messages.
    public var line: Int = 0

    /// Creates a mapping.
    public init(sourceIdentifier: String, country: String? = nil, publisher: String? = nil, validFrom: String, validTo: String? = nil,
                campaignID: String, campaignName: String? = nil, adGroupID: String? = nil, adGroupName: String? = nil,
                creativeID: String? = nil, creativeName: String? = nil, line: Int = 0) {
        self.sourceIdentifier = sourceIdentifier
        self.country = country
        self.publisher = publisher
        self.validFrom = validFrom
        self.validTo = validTo
        self.campaignID = campaignID
        self.campaignName = campaignName
        self.adGroupID = adGroupID
        self.adGroupName = adGroupName
        self.creativeID = creativeID
        self.creativeName = creativeName
        self.line = line
    }

    /// The mappings of one app and ad network at most.
    public static let maximumMappings = 20_000

    /// A problem with a mapping file or list: the line (0 for the whole) and what to do.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let line: Int
        public let message: String
        public var description: String { line > 0 ? "line \(line): \(message)" : message }

        /// A problem on `line` (0 for the whole list).
        public init(line: Int, message: String) {
            self.line = line
            self.message = message
        }
    }

    /// The columns a mapping file takes, as the SKAN standard's mapping API names them (case, spaces and underscores
    /// do not matter); `Start Date`, `SKCampaignId` (or `Source Identifier`) and `Campaign ID` are required. Key paths
    /// are immutable values, though not marked `Sendable`.
    nonisolated(unsafe) static let columns: [String: WritableKeyPath<SourceMapping, String?>] = [
        "country": \.country, "publisherid": \.publisher, "publisher": \.publisher, "enddate": \.validTo, "campaignname": \.campaignName,
        "adgroupid": \.adGroupID, "adgroupname": \.adGroupName, "creativeid": \.creativeID, "creativename": \.creativeName,
    ]

    /// Reads a mapping file (CSV with a header) and checks every row and that no two mappings overlap.
    public static func parse(_ bytes: [UInt8]) throws(Problem) -> [SourceMapping] {
        var reader = CSVReader(bytes, maximumFields: 32, maximumFieldBytes: 512)
        var mappings: [SourceMapping] = []
        do {
            guard let header = try reader.next() else { throw Problem(line: 0, message: "the file is empty; the first line names the columns") }
            let names = header.fields.map { $0.lowercased().filter { $0.isLetter || $0.isNumber } }
            func index(_ candidates: [String]) -> Int? { names.firstIndex { candidates.contains($0) } }
            guard let start = index(["startdate"]), let source = index(["skcampaignid", "sourceidentifier"]), let campaign = index(["campaignid"]) else {
                throw Problem(line: 1, message: "the header must name Start Date, SKCampaignId (or Source Identifier) and Campaign ID; End Date, Country, Publisher ID, Campaign Name, Ad Group ID, Ad Group Name, Creative ID and Creative Name are optional")
            }
            for (position, name) in names.enumerated() where !name.isEmpty {
                let meaning = columns[name].map { "\($0)" } ?? (["skcampaignid", "sourceidentifier"].contains(name) ? "source" : name)
                guard names[..<position].allSatisfy({ other in (columns[other].map { "\($0)" } ?? (["skcampaignid", "sourceidentifier"].contains(other) ? "source" : other)) != meaning }) else {
                    throw Problem(line: 1, message: "column \(header.fields[position].debugDescription) appears twice")
                }
                guard [start, source, campaign].contains(position) || columns[name] != nil else {
                    throw Problem(line: 1, message: "unknown column \(header.fields[position].debugDescription)")
                }
            }
            while let record = try reader.next() {
                if record.fields.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) { continue }
                guard mappings.count < maximumMappings else { throw Problem(line: record.line, message: "a file holds at most \(maximumMappings) mappings") }
                func cell(_ position: Int) -> String? {
                    guard position < record.fields.count else { return nil }
                    let text = record.fields[position].trimmingCharacters(in: .whitespaces)
                    return text.isEmpty ? nil : text
                }
                var mapping = SourceMapping(sourceIdentifier: cell(source) ?? "", validFrom: cell(start) ?? "", campaignID: cell(campaign) ?? "",
                                            line: record.line)
                for (position, name) in names.enumerated() {
                    if let path = columns[name] { mapping[keyPath: path] = cell(position) }
                }
                // Web domains are compared as postbacks carry them, in lower case.
                mapping.publisher = mapping.publisher?.lowercased()
                try mapping.check()
                mappings.append(mapping)
            }
        } catch let problem as CSVProblem {
            throw Problem(line: problem.line, message: problem.message)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(line: 0, message: "\(error)")
        }
        try checkOverlaps(mappings)
        return mappings
    }

    /// Checks one mapping's fields.
    public func check() throws(Problem) {
        guard (1...4).contains(sourceIdentifier.count), sourceIdentifier.allSatisfy({ ("0"..."9").contains($0) }) else {
            throw Problem(line: line, message: "SKCampaignId must be the identifier postbacks carry: 1 to 4 digits, such as 7 or 1234")
        }
        for (name, day) in [("Start Date", Optional(validFrom)), ("End Date", validTo)] {
            guard let day else { continue }
            guard Self.isDay(day) else { throw Problem(line: line, message: "\(name) must be a day such as 2026-11-01, got \(day.debugDescription)") }
        }
        if let validTo, validTo < validFrom { throw Problem(line: line, message: "End Date \(validTo) is before Start Date \(validFrom)") }
        if let country, !(country.count == 2 && country.allSatisfy({ $0.isASCII && $0.isUppercase })) {
            throw Problem(line: line, message: "Country must be a two-letter ISO 3166 code in capitals, such as US")
        }
        // A campaign id meets spend files' campaign column and the reports' campaign filter, which take 64 characters.
        guard (1...64).contains(campaignID.unicodeScalars.count) else {
            throw Problem(line: line, message: "Campaign ID must be 1 to 64 characters, as spend files name campaigns")
        }
        for (name, value) in [("Campaign ID", Optional(campaignID)), ("Campaign Name", campaignName), ("Ad Group ID", adGroupID),
                              ("Ad Group Name", adGroupName), ("Creative ID", creativeID), ("Creative Name", creativeName), ("Publisher ID", publisher)] {
            guard let value else { continue }
            guard (1...200).contains(value.unicodeScalars.count), !LabelText.hasRefused(value) else {
                throw Problem(line: line, message: "\(name) must be 1 to 200 characters without \(LabelText.refusedKinds)")
            }
        }
    }

    /// Whether `text` is a real calendar day `YYYY-MM-DD` between 1970 and 2199.
    static func isDay(_ text: String) -> Bool {
        guard text.count == 10, let moment = Timestamp.parse(text + "T00:00:00Z") else { return false }
        return Timestamp.format(moment).hasPrefix(text) && text >= "1970-01-01" && text < "2200-01-01"
    }

    /// Refuses two mappings of the same identifier, country and publisher whose days overlap, naming both and where;
    /// `place` names where a mapping was given (its line in a file, its index in a schema's list).
    public static func checkOverlaps(_ mappings: [SourceMapping], place: (SourceMapping) -> String = { "line \($0.line)" }) throws(Problem) {
        struct Scope: Hashable { let source: String, country: String?, publisher: String? }
        let grouped = Dictionary(grouping: mappings) { Scope(source: $0.sourceIdentifier, country: $0.country, publisher: $0.publisher) }
        for (scope, group) in grouped.sorted(by: { $0.key.source < $1.key.source }) {
            let ordered = group.sorted { ($0.validFrom, $0.line) < ($1.validFrom, $1.line) }
            for (earlier, later) in zip(ordered, ordered.dropFirst()) where earlier.validTo.map({ $0 >= later.validFrom }) ?? true {
                let limits = [scope.country.map { "in \($0)" }, scope.publisher.map { "for publisher \($0)" }].compactMap { $0 }.joined(separator: " ")
                throw Problem(line: later.line, message: "identifier \(scope.source)\(limits.isEmpty ? "" : " " + limits) means campaign \(earlier.campaignID) "
                    + "from \(earlier.validFrom) to \(earlier.validTo ?? "no end") (\(place(earlier))) and campaign \(later.campaignID) from \(later.validFrom) "
                    + "(\(place(later))); they overlap from \(later.validFrom): end the first before it")
            }
        }
    }

    /// The mapping as JSON, as the CLI and the API show it.
    public var json: JSONObject {
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        return JSONObject([
            JSONMember(key: "source_identifier", value: .string(sourceIdentifier)), JSONMember(key: "country", value: text(country)),
            JSONMember(key: "publisher", value: text(publisher)), JSONMember(key: "valid_from", value: .string(validFrom)),
            JSONMember(key: "valid_to", value: text(validTo)), JSONMember(key: "campaign_id", value: .string(campaignID)),
            JSONMember(key: "campaign_name", value: text(campaignName)), JSONMember(key: "ad_group_id", value: text(adGroupID)),
            JSONMember(key: "ad_group_name", value: text(adGroupName)), JSONMember(key: "creative_id", value: text(creativeID)),
            JSONMember(key: "creative_name", value: text(creativeName)),
        ])
    }
}
