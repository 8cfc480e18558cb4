// swift-tools-version:6.2
import PackageDescription

// Warnings fail the build in every target of ours (trust round 4, finding 12: a `where` that guarded one pattern of three).
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6), .treatAllWarnings(as: .error)]

let package = Package(
    name: "countersign",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "countersign", targets: ["CountersignCLI"]),
        .library(name: "CountersignServer", targets: ["CountersignServer"]),
        .executable(name: "countersign-bench", targets: ["CountersignBench"]),
        .executable(name: "countersign-fuzz", targets: ["CountersignFuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-configuration", exact: "1.4.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", exact: "0.2.0"),
        // The encoder apps add, in its own package so it carries none of the above.
        .package(path: "Packages/CountersignEncoder"),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "JWS", dependencies: ["COpenSSL"], swiftSettings: strict),
        .target(name: "Postback", dependencies: ["JWS"], swiftSettings: strict),
        .target(name: "PostbackMint", dependencies: ["JWS", "Postback"], swiftSettings: strict),
        .target(name: "AdServices", dependencies: ["JWS"], swiftSettings: strict),
        // The one CSV reader: spend, rate and claim files, reconciliation lists, MMP schema tables.
        .target(name: "CSV", swiftSettings: strict),
        .target(name: "ConversionSchema", dependencies: ["Postback", "JWS", "CSV", "Spend"], swiftSettings: strict),
        .target(name: "Spend", dependencies: ["Postback", "JWS", "CSV"], swiftSettings: strict),
        // Checking an app's Info.plist (or Expo config) for the attribution keys.
        .target(name: "AppSetup", dependencies: ["JWS"], swiftSettings: strict),
        // Designing a schema from the developer's own revenue: optimal ranges, and how well a schema tells revenue.
        // The encoder package's sources are linked into EncoderSources, so `schema codegen` writes the same code apps add.
        .target(name: "SchemaDesign", dependencies: ["ConversionSchema", "Spend", "CSV", "Postback", "JWS", .product(name: "CountersignEncoder", package: "CountersignEncoder")],
                resources: [.embedInCode("EncoderSources/EncodingSchema.swift.txt"), .embedInCode("EncoderSources/UserProgress.swift.txt"), .embedInCode("EncoderSources/PostbackAPI.swift.txt"), .embedInCode("EncoderSources/ConversionUpdate.swift.txt"), .embedInCode("EncoderSources/ConversionUpdating.swift.txt"), .embedInCode("EncoderSources/ConversionEncoder.swift.txt"), .embedInCode("EncoderSources/ConversionReporter.swift.txt"), .embedInCode("EncoderSources/AppleConversionUpdater.swift.txt")], swiftSettings: strict),
        .target(
            name: "Store",
            dependencies: [
                "Postback", "ConversionSchema", "AdServices", "Spend",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The delivery templates shipped with every release (docs/operations.md#delivery-templates).
            resources: [.embedInCode("Forwarding/Templates/appmetrica.json"), .embedInCode("Forwarding/Templates/branch.json"),
                        .embedInCode("Forwarding/Templates/unity.json"), .embedInCode("Forwarding/Templates/airbridge.json"),
                        .embedInCode("Forwarding/Templates/enriched.json"), .embedInCode("Forwarding/Templates/pull.json")],
            swiftSettings: strict
        ),
        // The server as a library: routes, services, settings, rendering, the application builder.
        .target(
            name: "CountersignServer",
            dependencies: [
                "JWS", "Postback", "PostbackMint", "Store", "ConversionSchema", "AdServices", "Spend", "CSV", "CMalloc", "SchemaDesign",
                .product(name: "CountersignEncoder", package: "CountersignEncoder"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            // The dashboard's pages and Apple's public keys are compiled into the binary: nothing else to deploy.
            resources: [.embedInCode("Dashboard/index.html"), .embedInCode("Dashboard/dashboard.css"), .embedInCode("Dashboard/core.js"), .embedInCode("Dashboard/dashboard.js"), .embedInCode("Dashboard/page-overview.js"), .embedInCode("Dashboard/page-campaigns.js"), .embedInCode("Dashboard/page-events.js"), .embedInCode("Dashboard/page-performance.js"), .embedInCode("Dashboard/page-values.js"), .embedInCode("Dashboard/logic.js"), .embedInCode("Dashboard/page-apple-ads.js"), .embedInCode("Dashboard/page-health.js"), .embedInCode("Dashboard/page-lookup.js"),
                        .embedInCode("Keys/AppleKeys/apple-cas-identifier-0.pem"), .embedInCode("Keys/AppleKeys/apple-development-identifier-0.pem"), .embedInCode("Keys/AppleKeys/apple-development-identifier-1.pem"), .embedInCode("Keys/AppleKeys/skan-p192.pem"), .embedInCode("Keys/AppleKeys/skan-p256.pem")],
            swiftSettings: strict
        ),
        // The `countersign` executable: the ArgumentParser commands over the library.
        .executableTarget(
            name: "CountersignCLI",
            dependencies: [
                "CountersignServer", "JWS", "Postback", "PostbackMint", "Store", "ConversionSchema", "AdServices", "Spend", "SchemaDesign", "AppSetup",
                .product(name: "CountersignEncoder", package: "CountersignEncoder"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "CountersignBench",
            dependencies: [
                "JWS", "Postback", "PostbackMint", "Store", "ConversionSchema",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(name: "CFuzzDriver"),
        // glibc's allocator knobs: fewer arenas, large buffers mapped apart, freed memory given back (trust round 4, finding 10).
        .target(name: "CMalloc"),
        .executableTarget(
            name: "CountersignFuzz",
            dependencies: ["CFuzzDriver", "JWS", "Postback", "ConversionSchema", "AdServices", "SchemaDesign", "AppSetup", "Spend"],
            swiftSettings: strict
        ),
        .testTarget(name: "JWSTests", dependencies: ["JWS"], resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(name: "PostbackTests", dependencies: ["Postback", "PostbackMint", "JWS"], resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(name: "ConversionSchemaTests", dependencies: ["ConversionSchema", "Postback", "PostbackMint", "JWS"], swiftSettings: strict),
        .testTarget(name: "AppSetupTests", dependencies: ["AppSetup", "JWS", "PostbackMint"], resources: [.copy("Fixtures")], swiftSettings: strict),
        .testTarget(name: "EncoderTests", dependencies: ["SchemaDesign", "ConversionSchema", "Postback", "PostbackMint", "JWS", .product(name: "CountersignEncoder", package: "CountersignEncoder")], swiftSettings: strict),
        .testTarget(name: "SchemaDesignTests", dependencies: ["SchemaDesign", "ConversionSchema", "Spend", "JWS", "Postback", "PostbackMint", .product(name: "CountersignEncoder", package: "CountersignEncoder")], swiftSettings: strict),
        .testTarget(name: "AdServicesTests", dependencies: ["AdServices", "JWS"], swiftSettings: strict),
        .target(
            name: "TestSupport",
            dependencies: [
                "Store", "CountersignServer", "JWS", "Postback", "PostbackMint",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "StoreTests", dependencies: [
            "Store", "Postback", "PostbackMint", "AdServices", "Spend", "TestSupport", "CountersignServer", .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Metrics", package: "swift-metrics"), .product(name: "MetricsTestKit", package: "swift-metrics"),
        ], swiftSettings: strict),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "CountersignServer", "CountersignCLI", "Postback", "PostbackMint", "Store", "JWS", "AdServices", "Spend", "TestSupport", "SchemaDesign", "ConversionSchema",
                .product(name: "CountersignEncoder", package: "CountersignEncoder"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
    ]
)
