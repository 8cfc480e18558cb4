/// Which of Apple's calls an app uses, by the OS it runs on: they differ in what they can set.
public enum PostbackAPI: String, Sendable, CaseIterable {
    /// SKAdNetwork before 4.0 (iOS 14.0-16.0): a fine value only, one window, and only an increase takes effect.
    case skadnetwork3
    /// SKAdNetwork 4.0 (iOS 16.1+): fine, coarse and lock, three windows.
    case skadnetwork4
    /// AdAttributionKit (iOS 17.4+): as SKAdNetwork 4.0, for installs and re-engagements.
    case adAttributionKit
}
