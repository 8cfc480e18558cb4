import Foundation
import Postback

/// What one postback means under a schema.
public struct DecodedConversion: Sendable, Equatable {
    /// The schema version used.
    public let schemaVersion: Int
    /// Install or re-engagement.
    public let conversionClass: ConversionClass
    /// The window decoded.
    public let window: Int
    /// `fine`, `coarse`, or `none` when the postback carries no value.
    public let valueKind: String
    /// The events, in schema order (bit fields in field order).
    public let events: [BusinessEvent]
    /// Whether the schema defines the postback's value (with events or explicitly with none); false for a value it
    /// leaves undefined and for no value.
    public let defined: Bool
    /// Merged properties of the value.
    public let properties: [String: String]
    /// The summed revenue range, when any event has revenue.
    public let revenue: RevenueRange?
    /// The source identifier's levels with names where the schema knows them.
    public let source: [DecodedSourceLevel]
}

/// One source-identifier level of a decoded postback.
public struct DecodedSourceLevel: Sendable, Equatable {
    public let level: String
    public let digits: String
    public let name: String?
}

/// Why a postback could not be decoded.
public enum DecodeFailure: String, Error, Sendable {
    /// No version is in force at the postback's time.
    case noVersionInForce = "no_version_in_force"
    /// The version defines nothing for this conversion class.
    case classNotDefined = "class_not_defined"
    /// The conversion type is one Apple added after this build.
    case unknownConversionType = "unknown_conversion_type"
}

/// Maps values to business events: the pure decoding of the schema.
public enum SchemaDecoder {
    /// Decodes a value for `conversionClass` and `window` with the version in force at `time`.
    public static func decode(
        _ schema: ConversionSchema, conversionClass: ConversionClass, window: Int, fine: Int?, coarse: CoarseValue.Level?,
        sourceIdentifier: String?, adNetwork: String? = nil, at time: Date
    ) -> Result<DecodedConversion, DecodeFailure> {
        guard let version = schema.version(at: time) else { return .failure(.noVersionInForce) }
        guard let definition = version.classes[conversionClass] else { return .failure(.classNotDefined) }
        var outcomes: [Outcome] = []
        var kind = "none"
        if let fine {
            kind = "fine"
            switch definition.fine(window: window) {
            case .table(let table): if let outcome = table[fine] { outcomes.append(outcome) }
            case .bitFields(let fields): outcomes += fields.compactMap { $0.values[$0.extract(fine)] }
            case nil: break
            }
        } else if let coarse {
            kind = "coarse"
            if let outcome = definition.coarse(window: window)?[coarse] { outcomes.append(outcome) }
        }
        let events = outcomes.flatMap(\.events)
        var properties: [String: String] = [:]
        for outcome in outcomes { properties.merge(outcome.properties) { $1 } }
        let ranges = events.compactMap(\.revenue)
        let revenue = ranges.first.map { first in
            ranges.dropFirst().reduce(first) { RevenueRange(min: $0.min + $1.min, max: $0.max + $1.max, currency: $0.currency) }
        }
        return .success(DecodedConversion(
            schemaVersion: version.version, conversionClass: conversionClass, window: window, valueKind: kind,
            events: events, defined: !outcomes.isEmpty, properties: properties, revenue: revenue, source: source(schema, sourceIdentifier, adNetwork: adNetwork)))
    }

    /// Decodes a postback with the version in force when it was received.
    public static func decode(_ schema: ConversionSchema, postback: Postback, receivedAt: Date) -> Result<DecodedConversion, DecodeFailure> {
        guard let conversionClass = postback.conversionType.conversionClass else { return .failure(.unknownConversionType) }
        return decode(schema, conversionClass: conversionClass, window: postback.postbackSequenceIndex, fine: postback.conversionValue,
                      // SKAdNetwork before 4.0 signs a campaign-id instead of a source-identifier: its digits name the campaign.
                      coarse: postback.coarseConversionValue?.level, sourceIdentifier: postback.sourceDigits,
                      adNetwork: postback.adNetworkID, at: receivedAt)
    }

    /// Splits a source identifier into the schema's levels, named for `adNetwork` where the schema names its values;
    /// levels beyond the digits present are left out.
    public static func source(_ schema: ConversionSchema, _ sourceIdentifier: String?, adNetwork: String?) -> [DecodedSourceLevel] {
        guard let sourceIdentifier else { return [] }
        let digits = Array(sourceIdentifier)
        return schema.sourceHierarchy.compactMap { level in
            guard level.lastDigit <= digits.count else { return nil }
            let part = String(digits[(level.firstDigit - 1)...(level.lastDigit - 1)])
            return DecodedSourceLevel(level: level.level, digits: part, name: level.name(of: part, adNetwork: adNetwork))
        }
    }
}
