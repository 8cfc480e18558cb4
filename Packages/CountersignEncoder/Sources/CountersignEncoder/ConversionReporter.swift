import Foundation

/// What an app keeps: the schema, the Apple call its OS offers, and the last update per conversion class, so it calls
/// Apple only when a value changes. Records run one after another, in the order they were made: an older update never
/// reaches Apple after a newer one.
public actor ConversionReporter {
    private let schema: EncodingSchema
    private let api: PostbackAPI
    private let updater: any ConversionUpdating
    private var applied: [EncodingSchema.ConversionClass: ConversionUpdate] = [:]
    /// The record before this one, which this one waits for.
    private var previous: Task<Void, Never>?

    /// A reporter for `schema` calling `updater` through `api` (``PostbackAPI/current`` on a device).
    public init(schema: EncodingSchema, api: PostbackAPI, updater: any ConversionUpdating) {
        self.schema = schema
        self.api = api
        self.updater = updater
    }

    /// Encodes `progress` and, when it changes what Apple holds for the window, tells Apple; returns what it sent.
    @discardableResult
    public func record(_ progress: UserProgress, conversionClass: EncodingSchema.ConversionClass = .install, at time: Date = Date()) async throws -> ConversionUpdate? {
        let before = previous
        let turn = Task<Result<ConversionUpdate?, any Error>, Never> {
            await before?.value
            return await self.apply(progress, conversionClass: conversionClass, at: time)
        }
        previous = Task { _ = await turn.value }
        return try await turn.value.get()
    }

    /// Encodes and, when the value changed, tells Apple; the update is kept only once Apple took it.
    private func apply(_ progress: UserProgress, conversionClass: EncodingSchema.ConversionClass, at time: Date) async -> Result<ConversionUpdate?, any Error> {
        guard let update = ConversionEncoder.update(schema, conversionClass: conversionClass, progress: progress, at: time, api: api, previous: applied[conversionClass]),
              update != applied[conversionClass] else { return .success(nil) }
        do {
            try await updater.apply(update, conversionClass: conversionClass, api: api)
        } catch {
            return .failure(error)
        }
        applied[conversionClass] = update
        return .success(update)
    }
}
