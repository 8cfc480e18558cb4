#if canImport(StoreKit) && os(iOS)
import StoreKit
#if canImport(AdAttributionKit)
import AdAttributionKit
#endif

extension PostbackAPI {
    /// The newest call this device offers: AdAttributionKit from iOS 17.4, SKAdNetwork 4.0 from iOS 16.1, else
    /// SKAdNetwork's fine value alone.
    public static var current: PostbackAPI {
        #if canImport(AdAttributionKit)
        if #available(iOS 17.4, *) { return .adAttributionKit }
        #endif
        if #available(iOS 16.1, *) { return .skadnetwork4 }
        return .skadnetwork3
    }
}

/// Apple's calls, one per API (quoted in docs/app-integration.md):
/// - AdAttributionKit: `Postback.updateConversionValue(_:coarseConversionValue:lockPostback:)`, and from iOS 18.0
///   `Postback.updateConversionValue(_:)` with a `PostbackUpdate` naming the conversion types;
/// - SKAdNetwork 4.0: `SKAdNetwork.updatePostbackConversionValue(_:coarseValue:lockWindow:completionHandler:)`;
/// - before: `SKAdNetwork.updatePostbackConversionValue(_:completionHandler:)` (iOS 15.4), `updateConversionValue(_:)`.
public struct AppleConversionUpdater: ConversionUpdating {
    public init() {}

    public func apply(_ update: ConversionUpdate, conversionClass: EncodingSchema.ConversionClass, api: PostbackAPI) async throws {
        let fine = update.fine ?? 0
        switch api {
        case .adAttributionKit:
            #if canImport(AdAttributionKit)
            if #available(iOS 18.0, *) {
                let types: [AdAttributionKit.PostbackUpdate.ConversionType] = conversionClass == .install ? [.install] : [.reengagement]
                try await AdAttributionKit.Postback.updateConversionValue(AdAttributionKit.PostbackUpdate(
                    fineConversionValue: fine, lockPostback: update.lock, coarseConversionValue: update.coarse.map(Self.coarse), conversionTypes: types))
                return
            }
            if #available(iOS 17.4, *) {
                try await AdAttributionKit.Postback.updateConversionValue(fine, coarseConversionValue: Self.coarse(update.coarse ?? .low), lockPostback: update.lock)
                return
            }
            #endif
            fallthrough
        case .skadnetwork4:
            if #available(iOS 16.1, *) {
                try await SKAdNetwork.updatePostbackConversionValue(fine, coarseValue: Self.skanCoarse(update.coarse ?? .low), lockWindow: update.lock)
                return
            }
            fallthrough
        case .skadnetwork3:
            if #available(iOS 15.4, *) {
                try await SKAdNetwork.updatePostbackConversionValue(fine)
            } else {
                SKAdNetwork.updateConversionValue(fine)
            }
        }
    }

    #if canImport(AdAttributionKit)
    @available(iOS 17.4, *)
    private static func coarse(_ value: EncodingSchema.CoarseValue) -> AdAttributionKit.CoarseConversionValue {
        switch value {
        case .low: .low
        case .medium: .medium
        case .high: .high
        }
    }
    #endif

    @available(iOS 16.1, *)
    private static func skanCoarse(_ value: EncodingSchema.CoarseValue) -> SKAdNetwork.CoarseConversionValue {
        switch value {
        case .low: .low
        case .medium: .medium
        case .high: .high
        }
    }
}
#endif
