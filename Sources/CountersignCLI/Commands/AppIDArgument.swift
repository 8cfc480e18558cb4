import ArgumentParser
import Postback

/// An app id as an argument or option: ArgumentParser refuses one that is not a numeric App Store id.
extension AppID: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(argument)
    }
}
