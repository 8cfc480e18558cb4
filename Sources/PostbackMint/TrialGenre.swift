import Foundation

/// A kind of app, and what its installs earn by days since install: the curve a trial's values follow
/// (docs/cli.md#trial-revenue gives the published figures each comes from).
public enum TrialGenre: String, CaseIterable, Sendable {
    /// A casual game on iOS: Liftoff's casual gaming reports.
    case casualGame = "casual-game"
    /// A mid-core game on iOS: Liftoff and GameRefinery's mid-core report.
    case midcoreGame = "midcore-game"
    /// A freemium subscription app: RevenueCat's State of Subscription Apps.
    case subscription

    /// Revenue per install by the end of windows 0, 1 and 2 (days 2, 7 and 35), in the schema's currency.
    public var revenuePerInstall: [Double] {
        switch self {
        case .casualGame: [0.085, 0.17, 0.46]
        case .midcoreGame: [0.083, 0.166, 0.45]
        case .subscription: [0.18, 0.225, 0.30]
        }
    }

    /// The share of installs that spend anything within each window.
    public var payerShare: [Double] {
        switch self {
        case .casualGame, .midcoreGame: [0.02, 0.015, 0.04]
        case .subscription: [0.02, 0.006, 0.012]
        }
    }

    /// What networks charge per install, in millionths of the currency.
    public var costPerInstallMicros: Int64 {
        switch self {
        case .casualGame: 2_230_000
        case .midcoreGame: 3_860_000
        case .subscription: 3_000_000
        }
    }

    /// The revenue one user active in `window` spends within it, when `activeShare` of installs are: nothing for most;
    /// for a payer, a draw from a log-normal spread (σ 1) whose mean makes the window's revenue per install the curve's.
    public func spend(window: Int, activeShare: Double, using random: inout some RandomNumberGenerator) -> Double {
        let share = min(1, payerShare[window] / activeShare)
        guard Double.random(in: 0..<1, using: &random) < share else { return 0 }
        let increment = revenuePerInstall[window] - (window == 0 ? 0 : revenuePerInstall[window - 1])
        // Box-Muller: a standard normal draw; exp(σz − σ²/2) has mean 1.
        let u = Double.random(in: Double.ulpOfOne..<1, using: &random), v = Double.random(in: 0..<1, using: &random)
        let z = (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
        return increment / payerShare[window] * exp(z - 0.5)
    }
}
