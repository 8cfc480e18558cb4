// swift-tools-version:5.9
// The conversion-value encoder an iOS app adds: the standard library and Foundation only, no dependency, so an app
// takes nothing of the server with it.
import PackageDescription

let package = Package(
    name: "CountersignEncoder",
    platforms: [.iOS(.v14), .macOS(.v11)],
    products: [.library(name: "CountersignEncoder", targets: ["CountersignEncoder"])],
    targets: [.target(name: "CountersignEncoder")]
)
