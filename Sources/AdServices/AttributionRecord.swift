import Foundation
import JWS

/// An Apple Ads attribution record: from the AdServices API, or normalised from a legacy iAd dictionary.
///
/// Every field but `attribution` is optional, as Apple's payloads drop fields when there is no match and add new
/// ones over time; unknown fields are kept in `unknownFields`. IDs are 64-bit.
public struct AttributionRecord: Sendable, Equatable {
    /// Where the record came from.
    public enum Source: String, Sendable { case adServices = "adservices", iAd = "iad" }

    public var source: Source
    /// `attribution`: true when an Apple Ads tap (30 days) or view (24 h) led to the download.
    public var attribution: Bool
    public var orgID: Int64?
    public var orgName: String?
    public var campaignID: Int64?
    public var campaignName: String?
    public var adGroupID: Int64?
    public var adGroupName: String?
    public var keywordID: Int64?
    public var keyword: String?
    public var keywordMatchType: String?
    /// `adId` (iOS 15.2+ devices).
    public var adID: Int64?
    /// `creativeSetId` (devices before iOS 15.2; legacy).
    public var creativeSetID: Int64?
    /// `conversionType` as received (`Download`, `Redownload`, `PreOrder`, or iAd's `newdownload`/`redownload`).
    public var conversionTypeRaw: String?
    /// `claimType` as received: `Click` or `Impression`.
    public var claimType: String?
    public var clickDate: Date?
    public var impressionDate: Date?
    /// iAd only: when the app was first purchased, and when this download happened.
    public var purchaseDate: Date?
    public var conversionDate: Date?
    public var countryOrRegion: String?
    public var supplyPlacement: String?
    /// Members this version does not know, kept as received.
    public var unknownFields: JSONObject

    /// The conversion type compared case-insensitively: `download`, `redownload`, `preorder`, or nil when absent or new.
    public var conversionType: String? {
        switch conversionTypeRaw?.lowercased() {
        case "download", "newdownload": "download"
        case "redownload": "redownload"
        case "preorder", "pre-order": "preorder"
        default: nil
        }
    }

    /// Detailed records (the app had ATT authorisation) carry `clickDate` or `impressionDate`; standard ones do not.
    public var isDetailed: Bool { source == .adServices && (clickDate != nil || impressionDate != nil) }

    /// Apple's developer-mode test payload uses these IDs; such records are excluded from production reporting.
    public var isTestPayload: Bool { orgID == 1_234_567_890 && campaignID == 1_234_567_890 && adGroupID == 1_234_567_890 }
}

/// Why a record or dictionary could not be read.
public struct RecordProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key concerned, if one.
    public let field: String?
    public let message: String
    public var description: String { field.map { "\($0): \(message)" } ?? message }
}

/// Dates as Apple Ads writes them: `2024-10-08T17:17Z` (minutes, AdServices) or `2020-08-04T17:18:07Z` (iAd).
enum AppleAdsDate {
    static func parse(_ text: String) -> Date? {
        if let date = (try? Date(text, strategy: .iso8601)) ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) {
            return date
        }
        // Minute precision without seconds: insert ":00" before the zone designator.
        if text.hasSuffix("Z"), text.count == 17 { return try? Date(String(text.dropLast()) + ":00Z", strategy: .iso8601) }
        return nil
    }
}

extension AttributionRecord {
    /// Decodes the JSON object Apple's AdServices API returns with status 200.
    public static func decode(adServicesResponse bytes: [UInt8]) -> Result<AttributionRecord, RecordProblem> {
        guard let object = (try? JSONParser.parse(bytes))?.object else {
            return .failure(RecordProblem(field: nil, message: "the response is not a JSON object"))
        }
        guard let attribution = object["attribution"]?.bool else {
            return .failure(RecordProblem(field: "attribution", message: "is required and must be true or false"))
        }
        var record = AttributionRecord(source: .adServices, attribution: attribution, unknownFields: JSONObject())
        let known: Set<String> = ["attribution", "orgId", "campaignId", "adGroupId", "keywordId", "adId", "creativeSetId",
                                  "conversionType", "claimType", "clickDate", "impressionDate", "countryOrRegion", "supplyPlacement"]
        do {
            record.orgID = try identifier(object, "orgId")
            record.campaignID = try identifier(object, "campaignId")
            record.adGroupID = try identifier(object, "adGroupId")
            record.keywordID = try identifier(object, "keywordId")
            record.adID = try identifier(object, "adId")
            record.creativeSetID = try identifier(object, "creativeSetId")
            record.conversionTypeRaw = try text(object, "conversionType")
            record.claimType = try text(object, "claimType")
            record.clickDate = try date(object, "clickDate")
            record.impressionDate = try date(object, "impressionDate")
            record.countryOrRegion = try text(object, "countryOrRegion")
            record.supplyPlacement = try text(object, "supplyPlacement")
        } catch {
            return .failure(error as? RecordProblem ?? RecordProblem(field: nil, message: "\(error)"))
        }
        record.unknownFields = JSONObject(object.members.filter { !known.contains($0.key) })
        return .success(record)
    }

    static func identifier(_ object: JSONObject, _ key: String) throws -> Int64? {
        switch object[key] {
        case nil, .null?: return nil
        case .number(let text)?:
            if let value = object[key]?.int64 { return value }
            // A whole number written with a fraction (1088.0) is still that whole number.
            if let number = Double(text), number == number.rounded(), abs(number) < 9e15 { return Int64(number) }
        case .string(let text)?: if let value = Int64(text) { return value }
        default: break
        }
        throw RecordProblem(field: key, message: "must be a whole number")
    }

    static func text(_ object: JSONObject, _ key: String) throws -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)?:
            if let problem = LabelText.problem(text) {
                throw RecordProblem(field: key, message: "must not hold \(LabelText.refusedKinds); it \(problem)")
            }
            return text
        default: throw RecordProblem(field: key, message: "must be a string")
        }
    }

    static func date(_ object: JSONObject, _ key: String) throws -> Date? {
        guard let text = try text(object, key) else { return nil }
        guard let date = AppleAdsDate.parse(text) else { throw RecordProblem(field: key, message: "is not a date such as 2024-10-08T17:17Z") }
        return date
    }
}
