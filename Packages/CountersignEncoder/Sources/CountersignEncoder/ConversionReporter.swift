import Foundation

/// Sets conversion values with Apple: the one thing an app does that tests cannot do on Linux, behind a protocol so
/// tests put a recorder in its place.
public protocol ConversionUpdating: Sendable {
    /// Tells Apple `update` for `conversionClass` through `api`.
    func apply(_ update: ConversionUpdate, conversionClass: EncodingSchema.ConversionClass, api: PostbackAPI) async throws
}

/// What an app keeps: the schema, the Apple call its OS offers, and the last update per window, so it calls Apple
/// only when a value changes.
public actor ConversionReporter {
    private let schema: EncodingSchema
    private let api: PostbackAPI
    private let updater: any ConversionUpdating
    private var applied: [String: ConversionUpdate] = [:]

    /// A reporter for `schema` calling `updater` through `api` (``PostbackAPI/current`` on a device).
    public init(schema: EncodingSchema, api: PostbackAPI, updater: any ConversionUpdating) {
        self.schema = schema
        self.api = api
        self.updater = updater
    }

    /// Encodes `progress` and, when it changes what Apple holds for the window, tells Apple; returns what it sent.
    @discardableResult
    public func record(_ progress: UserProgress, conversionClass: EncodingSchema.ConversionClass = .install, at time: Date = Date()) async throws -> ConversionUpdate? {
        let key = "\(conversionClass.rawValue)"
        guard let update = ConversionEncoder.update(schema, conversionClass: conversionClass, progress: progress, at: time, api: api, previous: applied[key]),
              update != applied[key] else { return nil }
        try await updater.apply(update, conversionClass: conversionClass, api: api)
        applied[key] = update
        return update
    }
}
