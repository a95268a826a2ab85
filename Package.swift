// swift-tools-version:6.0
//
// txrecon: a spool daemon that delivers App Store transactions to a backend
// at least once. Only the toolchain's own modules and Debian C libraries are
// used: no Swift package can be fetched on the machines this builds on.
import PackageDescription

let package = Package(
    name: "txrecon",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "txrecon", targets: ["txrecon"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // glibc's <malloc.h>, part of libc6-dev: nothing to link.
        .systemLibrary(name: "CGlibcExtras"),
        .target(
            name: "TxRecon",
            dependencies: ["CSystemd", "CCurl", "CCrypto", "CGlibcExtras", "CMicroHTTPD", "CNATS", "CSQLite"],
            swiftSettings: [.swiftLanguageMode(.v6)],
            linkerSettings: [.linkedLibrary("m")]
        ),
        .executableTarget(
            name: "txrecon",
            dependencies: ["TxRecon"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Shared by both test targets: a loopback HTTP server, a notify
        // socket, temporary spools, builders, a JWS signer for the test PKI, a
        // mock App Store Server API (which checks ES256 tokens with libcrypto).
        .target(
            name: "TxReconTestSupport",
            dependencies: ["TxRecon", "CCrypto", "CNATS"],
            path: "Tests/TxReconTestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "TxReconTests",
            dependencies: ["TxRecon", "TxReconTestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "TxReconIntegrationTests",
            dependencies: ["TxRecon", "TxReconTestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
