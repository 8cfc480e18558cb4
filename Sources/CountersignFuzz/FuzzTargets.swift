import AdServices
import AppSetup
import ConversionSchema
import Foundation
import JWS
import Postback
import SchemaDesign
import Spend

/// The parsers anyone can reach, each as a libFuzzer target: it must return for every input without a crash, a hang
/// or a leak, and where a property holds for every input the target checks it.
enum FuzzTargets {
    /// Apple's keys (the ones built into `countersign`, read from their source folder; scripts/fuzz runs from the
    /// checkout), so AAK bodies with Apple's kids reach the signature check.
    static let verifier = PostbackVerifier(keyRing: (try? KeyRing.load(directory: ProcessInfo.processInfo.environment["COUNTERSIGN_KEYS_DIR"] ?? "Sources/CountersignServer/Keys/AppleKeys"))
        ?? (try! KeyRing([])))

    /// Target names and what each runs.
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        // The outer postback JSON, through detection, decoding and verification.
        "postback": { bytes in _ = verifier.verify(bytes) },
        // The compact JWS parser.
        "jws": { bytes in _ = CompactJWS.parse(bytes) },
        // SKAN signed-string composition: whenever it composes, the string splits back into exactly its fields.
        "skan": { bytes in
            guard let object = (try? JSONParser.parse(bytes, limits: .publicBody))?.object,
                  case .success(let signed) = PostbackVerifier.skanSignedString(object) else { return }
            let separators = String(decoding: signed, as: UTF8.self).unicodeScalars.filter { $0 == "\u{2063}" }.count
            let expected = expectedFieldCount(object)
            if let expected, separators != expected - 1 {
                fatalError("a signed string with \(separators) separators for \(expected) fields: a field holds the separator")
            }
        },
        // The conversion-value schema reader and its static checks.
        "schema": { bytes in _ = SchemaReader.check(bytes) },
        // Legacy iAd dictionaries.
        "iad": { bytes in _ = IAdDictionary.normalise(bytes) },
        // A developer's revenue file (`schema suggest`, `schema score`), converted with one rate: whenever it is read,
        // every user has each window's revenue, and later windows hold at least the earlier ones'.
        "revenue": { bytes in
            guard case .success(let history) = RevenueHistoryFile.read(bytes, currency: "USD", rates: rates) else { return }
            for window in 1..<history.revenue.count where zip(history.revenue[window - 1], history.revenue[window]).contains(where: { $0 > $1 }) {
                fatalError("window \(window) holds less revenue than window \(window - 1): windows cumulate from install")
            }
        },
        // A network's dated source-identifier mappings: whatever is read has no two overlapping mappings of one
        // identifier, country and publisher.
        "mappings": { bytes in
            guard let mappings = try? SourceMapping.parse(bytes) else { return }
            let keyed = Dictionary(grouping: mappings) { [$0.sourceIdentifier, $0.country ?? "", $0.publisher ?? ""] }
            for group in keyed.values {
                let ordered = group.sorted { $0.validFrom < $1.validFrom }
                for (earlier, later) in zip(ordered, ordered.dropFirst()) where (earlier.validTo ?? "9999") >= later.validFrom {
                    fatalError("mappings that overlap were read: \(earlier) and \(later)")
                }
            }
        },
        // A published list of ad network ids and names: each id read once, in Apple's shape, with a name that passes
        // the rule every name does.
        "networks": { bytes in
            guard let list = try? AdNetworkList.parse(bytes) else { return }
            guard Set(list.entries.map(\.adNetworkID)).count == list.entries.count else { fatalError("an id was read twice: \(list.entries)") }
            for entry in list.entries where !isAdNetworkID(entry.adNetworkID) || LabelText.hasRefused(entry.name) || entry.name.isEmpty {
                fatalError("an entry no name check would pass was read: \(entry)")
            }
        },
        // An app's Info.plist (XML or binary) or Expo app.json, through every check of `setup check`.
        "plist": { bytes in
            guard case .success(let contents) = SetupFile.read(bytes), let root = contents.root else { return }
            _ = InfoPlistCheck.check(root, prefix: contents.prefix, expecting: InfoPlistCheck.Expectations(copyDomain: "example.com", adNetworks: ["cstr6suwn9.skadnetwork"]))
        },
    ]

    /// The rate the revenue target converts euros with.
    static let rates = [ExchangeRate(day: "2026-11-01", from: "EUR", to: "USD", rate: 1.0842)]

    /// How many fields the declared version signs, given which optional publisher field is present.
    static func expectedFieldCount(_ object: JSONObject) -> Int? {
        let publisher = object["source-app-id"] != nil || object["source-domain"] != nil ? 1 : 0
        switch object["version"]?.string ?? "1.0" {
        case "1.0": return 4
        case "2.0", "2.1": return 6 + publisher
        case "2.2": return 7 + publisher
        case "3.0": return 8 + publisher
        case "4.0": return 9 + publisher
        default: return nil
        }
    }
}
