import ConversionSchema
import CountersignEncoder
import Foundation
import Postback

/// Turns a schema into the form apps encode with (``EncodingSchema``): every value of every version, class and
/// window decoded by the decoder ingest uses, so what the app sets and what the server reads cannot disagree.
public enum EncodingSchemaCompiler {
    /// `schema` as apps read it; `revision` is the server's revision it came from.
    public static func compile(_ schema: ConversionSchema, revision: Int? = nil) -> EncodingSchema {
        EncodingSchema(app: schema.app.description, revision: revision, currency: schema.currency, versions: schema.versions.map { version in
            EncodingSchema.Version(version: version.version, effectiveFrom: version.effectiveFrom,
                                   install: windows(schema, version, .install), reengagement: windows(schema, version, .reEngagement))
        })
    }

    private static func windows(_ schema: ConversionSchema, _ version: SchemaVersion, _ conversionClass: ConversionClass) -> [EncodingSchema.Window]? {
        guard version.classes[conversionClass] != nil else { return nil }
        return (0...2).map { window in
            func rule<Value>(_ value: Value, fine: Int?, coarse: CoarseValue.Level?) -> EncodingSchema.Rule<Value>? {
                guard case .success(let decoded) = SchemaDecoder.decode(schema, conversionClass: conversionClass, window: window, fine: fine, coarse: coarse,
                                                                          sourceIdentifier: nil, at: version.effectiveFrom), decoded.defined else { return nil }
                return EncodingSchema.Rule(
                    value: value,
                    events: decoded.events.map { EncodingSchema.Event(name: $0.name, count: $0.count, revenue: $0.revenue == nil ? nil : true) },
                    revenue: decoded.revenue.map { EncodingSchema.Revenue(min: $0.min, max: $0.max) })
            }
            return EncodingSchema.Window(
                fine: (0...63).compactMap { rule($0, fine: $0, coarse: nil) },
                coarse: CoarseValue.Level.allCases.compactMap { level in EncodingSchema.CoarseValue(rawValue: level.rawValue).flatMap { rule($0, fine: nil, coarse: level) } })
        }
    }
}
