// swift-tools-version:6.1
import PackageDescription

// Settings every target of ours shares: complete concurrency checking is the Swift 6 default;
// these keep imports honest and existentials explicit.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "swift-odr",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ODRFormat", targets: ["ODRFormat"]),
        .library(name: "ODRBuilder", targets: ["ODRBuilder"]),
        .library(name: "ODRRuntime", targets: ["ODRRuntime"]),
        .library(name: "ODRSimulation", targets: ["ODRSimulation"]),
        .library(name: "ODRServe", targets: ["ODRServe"]),
        // The C API as a shared library. Named odrc because the product `odr` is the command;
        // `make install` installs it as libodr.so (docs/C-API.md).
        .library(name: "odrc", type: .dynamic, targets: ["ODRCAPI"]),
        .executable(name: "odrpack", targets: ["odrpack"]),
        .executable(name: "odr", targets: ["odr"]),
        .executable(name: "odrsim", targets: ["odrsim"]),
        .executable(name: "odrbench", targets: ["odrbench"]),
    ],
    // FoundationAPI (on by default): the runtime's API that needs all of Foundation, not only
    // FoundationEssentials: ResourceRequest.progress (a Foundation `Progress`), the events posted to
    // NotificationCenter, and NetworkManagerProbe (which runs nmcli with `Process`). Without it
    // (`--disable-default-traits`, as `make install` builds the C library) ODRFormat, ODRRuntime and
    // ODRCAPI import FoundationEssentials only on Linux, so neither libFoundation nor ICU is loaded
    // (docs/RUNTIME.md, "Foundation and the FoundationAPI trait").
    // Sharing (on by default): the C library's share server (odr_manager_start_sharing) links
    // ODRServe, SwiftNIO and Hummingbird into libodr, 11.5 MB more than a game ships without it;
    // `make install` leaves it out unless SHARING=1 (docs/C-API.md, "Sharing with peers").
    traits: [
        .trait(
            name: "FoundationAPI",
            description: "ResourceRequest.progress (Foundation Progress), NotificationCenter events and NetworkManagerProbe; needs all of Foundation"
        ),
        .trait(
            name: "Sharing",
            description: "odr_manager_start_sharing in the C library: links ODRServe (SwiftNIO, Hummingbird) into it, 11.5 MB more to ship"
        ),
        .default(enabledTraits: ["FoundationAPI", "Sharing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Without Hummingbird's default traits (FullFoundation, ConfigurationSupport): the share
        // server is linked into libodr, which must not load Foundation (docs/C-API.md).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // C libraries, wrapped with typed `static inline` shims for what Swift cannot call directly.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),

        // Libraries.
        .target(
            name: "ODRFormat",
            dependencies: [
                "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ODRBuilder",
            dependencies: ["ODRFormat"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ODRRuntime",
            dependencies: [
                "ODRFormat",
                "CCurl",
                "CSQLite",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ODRSimulation",
            dependencies: ["ODRRuntime", "ODRFormat"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ODRServe",
            dependencies: [
                "ODRFormat", "ODRRuntime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The C API: the header (include/odr.h) in a C target, the `@_cdecl` functions in Swift.
        .target(
            name: "CODR",
            path: "Sources/CODR"
        ),
        .target(
            name: "ODRCAPI",
            dependencies: [
                "CODR", "ODRRuntime", "ODRFormat",
                .target(name: "ODRServe", condition: .when(traits: ["Sharing"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Sharing"])),
            ],
            swiftSettings: swiftSettings
        ),

        // What every command-line tool shares: one error format, one byte-size syntax (docs/CLI.md).
        .target(
            name: "ODRCommandLine",
            dependencies: [
                "ODRFormat",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        // Command-line tools: thin commands over the libraries.
        .executableTarget(
            name: "odrpack",
            dependencies: [
                "ODRCommandLine",
                "ODRBuilder", "ODRFormat", "ODRServe",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/odrpack",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "odr",
            dependencies: [
                "ODRCommandLine",
                "ODRRuntime", "ODRFormat", "ODRServe",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/odr",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "odrsim",
            dependencies: [
                "ODRCommandLine",
                "ODRSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/odrsim",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "odrbench",
            dependencies: [
                "ODRCommandLine",
                "ODRFormat", "ODRBuilder", "ODRRuntime", "ODRSimulation", "ODRServe", "CODR", "ODRCAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/odrbench",
            swiftSettings: swiftSettings
        ),

        // The readers of untrusted bytes as fuzz targets (docs: CONTRIBUTING.md, "Fuzzing"): the
        // libFuzzer executables below and the replay test in ODRRuntimeTests call the same entry points.
        .target(
            name: "ODRFuzzing",
            dependencies: ["ODRFormat", "ODRBuilder", "ODRRuntime"],
            path: "Fuzz/EntryPoints",
            swiftSettings: swiftSettings
        ),

        // Tests. Fixtures shared between test targets live in ODRTestSupport, never copied.
        .target(
            name: "ODRTestSupport",
            dependencies: [
                "ODRFormat", "ODRBuilder", "ODRServe",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/ODRTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ODRFormatTests",
            dependencies: ["ODRFormat", "ODRTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ODRBuilderTests",
            dependencies: ["ODRBuilder", "ODRFormat", "ODRServe", "ODRTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ODRRuntimeTests",
            dependencies: ["ODRRuntime", "ODRFormat", "ODRServe", "ODRTestSupport", "ODRFuzzing", "CCurl", "CSQLite"],
            exclude: ["Store/Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ODRSimulationTests",
            dependencies: ["ODRSimulation", "ODRRuntime", "ODRTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ODRCAPITests",
            dependencies: ["CODR", "ODRCAPI", "ODRRuntime", "ODRBuilder", "ODRFormat", "ODRServe", "ODRTestSupport"],
            exclude: ["C"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ODRServeTests",
            dependencies: ["ODRServe", "ODRTestSupport"],
            swiftSettings: swiftSettings
        ),
        // The documentation's Swift samples, generated by scripts/doc-samples.py and only compiled:
        // a sample that does not build as printed fails the build. Warnings are off, since a
        // sample's unused values are part of showing the API.
        .testTarget(
            name: "DocSamples",
            dependencies: ["ODRRuntime", "ODRFormat", "ODRBuilder", "ODRServe", "ODRSimulation", "ODRTestSupport"],
            path: "Tests/DocSamples",
            swiftSettings: swiftSettings + [.unsafeFlags(["-suppress-warnings"])]
        ),
    ]
)

// `make fuzz` (ODR_FUZZ=1) adds one libFuzzer executable per reader of untrusted bytes, fuzz-<name>
// from Fuzz/Targets/<name>/, built with `-sanitize=fuzzer,address`; other builds never see them.
if Context.environment["ODR_FUZZ"] == "1" {
    let fuzzTargets = [
        "pack-stream", "pack-range", "central-directory", "manifest-json", "manifest-compact",
        "manifest-compact-file", "split-manifest", "tag-bin", "file-table", "catalog", "journal", "tag-rules", "response-headers", "dbus-reply",
    ]
    package.targets.append(.systemLibrary(name: "CLibFuzzer", path: "Fuzz/LibFuzzer"))
    for name in fuzzTargets {
        package.products.append(.executable(name: "fuzz-\(name)", targets: ["fuzz-\(name)"]))
        package.targets.append(.executableTarget(
            name: "fuzz-\(name)",
            dependencies: ["ODRFuzzing", "CLibFuzzer"],
            path: "Fuzz/Targets/\(name)",
            swiftSettings: swiftSettings
        ))
    }
}
