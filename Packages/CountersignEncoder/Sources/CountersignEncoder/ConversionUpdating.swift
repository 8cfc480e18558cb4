/// Sets conversion values with Apple: the one thing an app does that tests cannot do on Linux, behind a protocol so
/// tests put a recorder in its place.
public protocol ConversionUpdating: Sendable {
    /// Tells Apple `update` for `conversionClass` through `api`.
    func apply(_ update: ConversionUpdate, conversionClass: EncodingSchema.ConversionClass, api: PostbackAPI) async throws
}
