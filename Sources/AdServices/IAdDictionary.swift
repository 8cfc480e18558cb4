import Foundation
import JWS

/// Legacy iAd attribution dictionaries (`ADClient.requestAttributionDetails`), normalised into attribution records.
///
/// The dictionary nests its keys under a version key such as `Version3.1`; values are often strings even where
/// Apple documents integers or Booleans, so both readings are accepted.
public enum IAdDictionary {
    /// Normalises a JSON object `{"Version3.1": {"iad-attribution": "true", ...}}`.
    /// The body to keep for a dictionary that `normalise` accepted: as sent, or written again without white space when
    /// it is longer than Apple's are (2 KB), so padding is not stored.
    public static func keptBody(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count > 2048, let value = try? JSONParser.parse(bytes, limits: .publicBody) else { return bytes }
        let compact = Array(value.serialized.utf8)
        return compact.count < bytes.count ? compact : bytes
    }

    public static func normalise(_ bytes: [UInt8]) -> Result<AttributionRecord, RecordProblem> {
        let root: JSONObject
        do {
            guard let object = try JSONParser.parse(bytes, limits: .publicBody).object else {
                return .failure(RecordProblem(field: nil, message: "the body is not a JSON object"))
            }
            root = object
        } catch {
            return .failure(RecordProblem(field: nil, message: "the body is not a JSON object: \(error.located(in: bytes))"))
        }
        let versions = root.members.filter { $0.key.utf8.starts(with: "Version".utf8) }
        guard versions.count == 1, let inner = versions[0].value.object, root.members.count == 1 else {
            return .failure(RecordProblem(field: nil, message: "expected one version key such as \"Version3.1\" holding the iAd attributes"))
        }
        guard let attributionValue = inner["iad-attribution"] else {
            return .failure(RecordProblem(field: "iad-attribution", message: "is required"))
        }
        let attribution: Bool
        switch attributionValue {
        case .bool(let flag): attribution = flag
        case .string(let text) where ["true", "false"].contains(text.lowercased()): attribution = text.lowercased() == "true"
        default: return .failure(RecordProblem(field: "iad-attribution", message: "must be true or false"))
        }
        var record = AttributionRecord(source: .iAd, attribution: attribution, unknownFields: JSONObject())
        let known: Set<String> = ["iad-attribution", "iad-org-id", "iad-org-name", "iad-campaign-id", "iad-campaign-name",
                                  "iad-adgroup-id", "iad-adgroup-name", "iad-lineitem-id", "iad-lineitem-name", "iad-keyword-id",
                                  "iad-keyword", "iad-keyword-matchtype", "iad-ad-id", "iad-creativeset-id", "iad-conversion-type",
                                  "iad-click-date", "iad-purchase-date", "iad-conversion-date", "iad-country-or-region"]
        // Apple's dictionaries hold a couple of dozen short members: a name of Apple's is at most 512 bytes, and members
        // Apple never sent are kept only up to 1 KiB in all, so nobody stores kilobytes through this public route.
        if let long = inner.members.first(where: { known.contains($0.key) && $0.value.serialized.utf8.count > 512 }) {
            return .failure(RecordProblem(field: long.key, message: "is longer than 512 bytes"))
        }
        let unknownBytes = inner.members.filter { !known.contains($0.key) }.reduce(0) { $0 + $1.key.utf8.count + $1.value.serialized.utf8.count }
        guard unknownBytes <= 1024 else {
            return .failure(RecordProblem(field: nil, message: "members Apple does not send take more than 1 KiB; send what ADClient returned"))
        }
        do {
            record.orgID = try AttributionRecord.identifier(inner, "iad-org-id")
            record.orgName = try AttributionRecord.text(inner, "iad-org-name")
            record.campaignID = try AttributionRecord.identifier(inner, "iad-campaign-id")
            record.campaignName = try AttributionRecord.text(inner, "iad-campaign-name")
            // `iad-lineitem-*` are older names for the ad group.
            record.adGroupID = try AttributionRecord.identifier(inner, "iad-adgroup-id") ?? AttributionRecord.identifier(inner, "iad-lineitem-id")
            record.adGroupName = try AttributionRecord.text(inner, "iad-adgroup-name") ?? AttributionRecord.text(inner, "iad-lineitem-name")
            record.keywordID = try AttributionRecord.identifier(inner, "iad-keyword-id")
            record.keyword = try AttributionRecord.text(inner, "iad-keyword")
            record.keywordMatchType = try AttributionRecord.text(inner, "iad-keyword-matchtype")
            record.adID = try AttributionRecord.identifier(inner, "iad-ad-id")
            record.creativeSetID = try AttributionRecord.identifier(inner, "iad-creativeset-id")
            record.conversionTypeRaw = try AttributionRecord.text(inner, "iad-conversion-type")
            record.clickDate = try AttributionRecord.date(inner, "iad-click-date")
            record.purchaseDate = try AttributionRecord.date(inner, "iad-purchase-date")
            record.conversionDate = try AttributionRecord.date(inner, "iad-conversion-date")
            record.countryOrRegion = try AttributionRecord.text(inner, "iad-country-or-region")
        } catch {
            return .failure(error as? RecordProblem ?? RecordProblem(field: nil, message: "\(error)"))
        }
        if record.conversionTypeRaw != nil, record.conversionType == nil {
            return .failure(RecordProblem(field: "iad-conversion-type", message: "must be newdownload, redownload, download, preorder or pre-order"))
        }
        record.claimType = record.attribution ? "Click" : nil
        record.unknownFields = JSONObject(inner.members.filter { !known.contains($0.key) })
        return .success(record)
    }
}
