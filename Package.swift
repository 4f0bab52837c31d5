// swift-tools-version: 6.0
// The package: C libraries behind thin system-library modules, one small C
// shim, then one Swift target per layer (see docs/architecture.md).
import PackageDescription

/// `make fuzz` sets CARRIER_FUZZ=1 to add the libFuzzer executable, which only
/// links with -sanitize=fuzzer (it calls libFuzzer's driver).
let fuzzing = Context.environment["CARRIER_FUZZ"] != nil

/// A system-library module for one C library, found with pkg-config and
/// installed from Debian by scripts/setup.sh.
func cLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "carrier-rtc",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "CarrierNode", targets: ["CarrierNode"]),
        .library(name: "ExpressServer", targets: ["ExpressServer"]),
        // Calls between friends: the call stack signaled over the node.
        .library(name: "CarrierCalls", targets: ["RtcCalls", "CarrierSessions", "CarrierSignaling", "CarrierFiles"]),
        // The call stack; grows layer by layer (transport, media, calls).
        .library(
            name: "CarrierRTC",
            targets: [
                "RtcSDP", "RtcRTP", "RtcSRTP", "RtcDTLS", "RtcICE", "RtcSCTP", "RtcCongestion", "RtcPeer", "RtcCodecs",
                "RtcMediaFiles",
                "RtcContainers", "RtcMedia", "RtcFileTransfer", "RtcCalls",
            ]),
        .executable(name: "carrier", targets: ["CarrierCLI"]),
        .executable(name: "echo-bot", targets: ["EchoBot"]),
        .executable(name: "offline-and-files", targets: ["OfflineAndFiles"]),
        .executable(name: "data-channel-file", targets: ["DataChannelFile"]),
        .executable(name: "call-over-socket", targets: ["CallOverSocket"]),
        .executable(name: "live-media", targets: ["LiveMedia"]),
        .executable(name: "friends-and-calls", targets: ["FriendsAndCalls"]),
        .executable(name: "identity", targets: ["Identity"]),
        .executable(name: "port-forwarding", targets: ["PortForwarding"]),
        .executable(name: "express-load", targets: ["ExpressLoad"]),
    ],
    targets: [
        // C modules: no Swift code, only module maps over the real headers.
        cLibrary("CToxcore", pkgConfig: "toxcore", apt: ["libtoxcore-dev"]),
        cLibrary("CSodium", pkgConfig: "libsodium", apt: ["libsodium-dev"]),
        cLibrary("COpenSSL", pkgConfig: "openssl", apt: ["libssl-dev"]),
        cLibrary("CSrtp", pkgConfig: "libsrtp2", apt: ["libsrtp2-dev"]),
        cLibrary("CUsrsctp", pkgConfig: "usrsctp", apt: ["libusrsctp-dev"]),
        cLibrary("CNice", pkgConfig: "nice", apt: ["libnice-dev"]),
        cLibrary("COpus", pkgConfig: "opus", apt: ["libopus-dev"]),
        cLibrary("CVpx", pkgConfig: "vpx", apt: ["libvpx-dev"]),
        cLibrary(
            "CFFmpeg", pkgConfig: "libavformat",
            apt: ["libavformat-dev", "libavcodec-dev", "libswresample-dev", "libswscale-dev", "libavutil-dev"]),
        cLibrary("COgg", pkgConfig: "ogg", apt: ["libogg-dev"]),
        // Express: the service's HTTP server and store, the node's HTTP client.
        cLibrary("CMicroHttpd", pkgConfig: "libmicrohttpd", apt: ["libmicrohttpd-dev"]),
        cLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
        cLibrary("CPostgres", pkgConfig: "libpq", apt: ["libpq-dev"]),
        cLibrary("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
        // Forwards for macros and variadic C calls (opus/vpx controls, g_object_set).
        .target(name: "CShim"),
        .target(name: "CShimOpus", dependencies: ["COpus"]),
        .target(name: "CShimVpx", dependencies: ["CVpx"]),
        .target(name: "CShimGLib", dependencies: ["CNice"]),
        .target(name: "CShimToxcore", dependencies: ["CToxcore", "CSodium"]),

        // Small concurrency and time helpers every layer may use.
        .target(name: "AsyncExtras", swiftSettings: strict),
        // The one logging facility: levels, a logger per layer, stderr by default.
        .target(name: "CarrierLog", swiftSettings: strict),
        // Names from the network made safe, and files placed without replacing any.
        .target(name: "FileSafety", dependencies: ["COpenSSL"], swiftSettings: strict),
        // The Carrier network's bytes: FlatBuffers packets with a verifier (pure, no C library).
        .target(name: "CarrierWire", dependencies: ["CSodium", "FileSafety"], swiftSettings: strict),

        // The P2P node on toxcore: identity, friends, messages, invites, groups.
        .target(
            name: "CarrierNode",
            dependencies: [
                "CToxcore", "CSodium", "COpenSSL", "CCurl", "AsyncExtras", "CarrierLog", "FileSafety", "CarrierWire",
                "CShimToxcore",
            ],
            swiftSettings: strict),

        // Express: the offline-delivery service (HTTP on libmicrohttpd, a SQLite
        // or PostgreSQL store, TURN credentials); uses the node's identity and crypto types.
        .target(
            name: "ExpressServer",
            dependencies: [
                "CarrierNode", "CarrierWire", "CMicroHttpd", "CSQLite", "CPostgres", "COpenSSL", "CarrierLog",
            ],
            swiftSettings: strict),

        // The WebRTC transport, one target per layer (docs/architecture.md).
        .target(name: "RtcSDP", swiftSettings: strict),
        .target(name: "RtcRTP", swiftSettings: strict),
        .target(name: "RtcCongestion", dependencies: ["RtcRTP"], swiftSettings: strict),
        .target(name: "RtcSRTP", dependencies: ["CSrtp"], swiftSettings: strict),
        .target(name: "RtcDTLS", dependencies: ["COpenSSL", "RtcSRTP"], swiftSettings: strict),
        .target(name: "RtcICE", dependencies: ["CNice", "CShimGLib", "COpenSSL", "CarrierLog"], swiftSettings: strict),
        .target(name: "RtcSCTP", dependencies: ["CUsrsctp", "CShim"], swiftSettings: strict),
        .target(
            name: "RtcPeer",
            dependencies: [
                "RtcSDP", "RtcRTP", "RtcSRTP", "RtcDTLS", "RtcICE", "RtcSCTP", "RtcCongestion", "AsyncExtras",
                "CarrierLog",
            ],
            swiftSettings: strict),
        // Media: codecs and their RTP payload formats, media files, and the
        // pipeline that carries them over a peer connection.
        .target(name: "RtcCodecs", dependencies: ["COpus", "CVpx", "CShimOpus", "CShimVpx"], swiftSettings: strict),
        .target(name: "RtcMediaFiles", dependencies: ["RtcCodecs", "COgg", "FileSafety"], swiftSettings: strict),
        // Any media file libavformat opens: tracks, packets, decoding to PCM and I420.
        .target(
            name: "RtcContainers", dependencies: ["CFFmpeg", "RtcCodecs", "RtcMediaFiles", "FileSafety"],
            swiftSettings: strict),
        .target(
            name: "RtcMedia",
            dependencies: [
                "RtcPeer", "RtcRTP", "RtcCodecs", "RtcMediaFiles", "RtcContainers", "AsyncExtras", "FileSafety",
            ],
            swiftSettings: strict),
        // Files over a data channel (the binary file protocol, docs/file-protocol.md).
        .target(
            name: "RtcFileTransfer", dependencies: ["RtcPeer", "COpenSSL", "AsyncExtras", "FileSafety"],
            swiftSettings: strict),
        // Calls: RtcSignal, signaling providers, the call state machine and client.
        .target(
            name: "RtcCalls", dependencies: ["RtcPeer", "RtcMedia", "RtcFileTransfer", "AsyncExtras", "CarrierLog"],
            swiftSettings: strict),
        // Sessions with friends: streams, channels and TCP port forwarding as data channels.
        .target(
            name: "CarrierSessions", dependencies: ["RtcCalls", "RtcPeer", "CarrierLog"],
            swiftSettings: strict),
        // The one place calls and sessions meet the node: signals as invites to `friend:carrier` / `friend:session`.
        .target(
            name: "CarrierSignaling",
            dependencies: ["CarrierNode", "RtcCalls", "RtcPeer", "CarrierSessions", "CarrierLog", "AsyncExtras"],
            swiftSettings: strict),
        // Files between friends: a direct session when it connects, toxcore's file transfer when not.
        .target(
            name: "CarrierFiles",
            dependencies: [
                "CarrierNode", "CarrierSessions", "RtcFileTransfer", "RtcPeer", "FileSafety", "CarrierLog",
                "AsyncExtras", "CarrierWire",
            ],
            swiftSettings: strict),

        // Load for Express nodes (make bench): signed deposits and pulls from many threads.
        .executableTarget(name: "ExpressLoad", dependencies: ["CarrierNode", "AsyncExtras"], swiftSettings: strict),

        // The `carrier` command.
        .executableTarget(
            name: "CarrierCLI",
            dependencies: [
                "CarrierNode", "ExpressServer", "RtcPeer", "RtcCodecs", "RtcMediaFiles", "RtcMedia",
                "RtcFileTransfer", "RtcCalls", "CarrierSessions", "CarrierSignaling", "CarrierFiles", "CarrierLog",
                "AsyncExtras",
                "FileSafety", "CarrierWire",
                "CShim",
            ],
            swiftSettings: strict),

        // Every parser of network bytes as a fuzz target (used by the fuzzer and by FuzzCorpusTests).
        .target(
            name: "FuzzTargets",
            dependencies: [
                "CarrierNode", "RtcSDP", "RtcRTP", "RtcSCTP", "RtcCalls", "RtcFileTransfer", "RtcMediaFiles",
                "FileSafety", "CarrierWire",
            ],
            swiftSettings: strict),

        // Runnable samples (samples/).
        .executableTarget(
            name: "EchoBot",
            dependencies: ["CarrierNode"],
            path: "samples/EchoBot",
            swiftSettings: strict),
        .executableTarget(
            name: "OfflineAndFiles",
            dependencies: ["CarrierNode", "ExpressServer", "AsyncExtras"],
            path: "samples/OfflineAndFiles",
            swiftSettings: strict),
        .executableTarget(
            name: "DataChannelFile",
            dependencies: ["RtcPeer", "RtcFileTransfer"],
            path: "samples/DataChannelFile",
            swiftSettings: strict),
        .executableTarget(
            name: "PortForwarding",
            dependencies: ["CarrierSessions", "RtcCalls", "RtcPeer"],
            path: "samples/PortForwarding",
            swiftSettings: strict),
        .executableTarget(
            name: "CallOverSocket",
            dependencies: ["RtcCalls", "RtcMedia", "RtcPeer"],
            path: "samples/CallOverSocket",
            swiftSettings: strict),
        .executableTarget(
            name: "LiveMedia",
            dependencies: ["RtcCalls", "RtcMedia", "RtcCodecs", "RtcPeer"],
            path: "samples/LiveMedia",
            swiftSettings: strict),
        .executableTarget(
            name: "FriendsAndCalls",
            dependencies: ["CarrierNode", "CarrierSignaling", "RtcCalls", "RtcPeer", "AsyncExtras"],
            path: "samples/FriendsAndCalls",
            swiftSettings: strict),
        .executableTarget(
            name: "Identity",
            dependencies: ["CarrierNode"],
            path: "samples/Identity",
            swiftSettings: strict),

        // Helpers shared by the test targets: child processes, bounded waits.
        .target(
            name: "TestSupport", dependencies: ["AsyncExtras", "COpenSSL", "RtcCodecs", "RtcMediaFiles", "RtcMedia"],
            path: "Tests/TestSupport",
            swiftSettings: strict),

        .testTarget(
            name: "CLibraryTests",
            dependencies: [
                "CToxcore", "CSodium", "COpenSSL", "CSrtp", "CUsrsctp", "CNice", "COpus", "CVpx", "CShimOpus",
                "CShimGLib",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "FuzzCorpusTests",
            dependencies: ["FuzzTargets", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "CarrierLogTests",
            dependencies: ["CarrierLog"],
            swiftSettings: strict),
        .testTarget(
            name: "FileSafetyTests",
            dependencies: ["FileSafety"],
            swiftSettings: strict),
        .testTarget(
            name: "ExpressServerTests",
            dependencies: ["ExpressServer", "CarrierNode", "CarrierWire", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "CarrierNodeTests",
            dependencies: ["CarrierNode", "CarrierWire", "AsyncExtras", "FileSafety", "TestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: strict),
        .testTarget(
            name: "NodeNetworkTests",
            dependencies: [
                "TestSupport", "CarrierNode", "ExpressServer", "CarrierSignaling", "RtcCalls", "RtcPeer",
                "RtcMediaFiles", "CarrierFiles", "CarrierSessions", "RtcFileTransfer", "FileSafety", "AsyncExtras",
                "CShimToxcore", "CToxcore", "CarrierWire",
            ],
            swiftSettings: strict),
        .testTarget(name: "AsyncExtrasTests", dependencies: ["AsyncExtras"], swiftSettings: strict),
        .testTarget(
            name: "CarrierWireTests", dependencies: ["CarrierWire", "TestSupport"],
            resources: [.copy("Fixtures"), .copy("carrier-packet.fbs"), .copy("decode_packets.py")],
            swiftSettings: strict),
        .testTarget(
            name: "RtcSDPTests",
            dependencies: ["RtcSDP", "TestSupport"],
            resources: [.copy("Golden")],
            swiftSettings: strict),
        .testTarget(
            name: "RtcRTPTests",
            dependencies: ["RtcRTP"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcSRTPTests",
            dependencies: ["RtcSRTP", "RtcRTP"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcDTLSTests",
            dependencies: ["RtcDTLS", "RtcSRTP"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcICETests",
            dependencies: ["TestSupport", "RtcICE", "CNice"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcSCTPTests",
            dependencies: ["TestSupport", "RtcSCTP", "CShim", "CUsrsctp"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcPeerTests",
            dependencies: ["TestSupport", "RtcPeer", "RtcSDP", "RtcRTP", "RtcDTLS", "RtcSCTP", "RtcICE"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcCodecsTests",
            dependencies: ["TestSupport", "RtcCodecs"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcContainersTests",
            dependencies: ["TestSupport", "RtcContainers", "RtcMediaFiles", "RtcCodecs"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcMediaFilesTests",
            dependencies: ["TestSupport", "RtcMediaFiles", "RtcCodecs"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcMediaTests",
            dependencies: ["TestSupport", "RtcMedia", "RtcPeer", "RtcRTP", "RtcCodecs", "RtcMediaFiles"],
            swiftSettings: strict),
        .testTarget(
            name: "CarrierSessionsTests",
            dependencies: ["TestSupport", "CarrierSessions", "RtcCalls", "RtcPeer", "RtcFileTransfer", "FileSafety"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcCallsTests",
            dependencies: [
                "TestSupport", "RtcCalls", "RtcPeer", "RtcMedia", "RtcMediaFiles", "RtcCodecs", "RtcFileTransfer",
                "CShim",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "RtcCongestionTests",
            dependencies: ["RtcCongestion", "RtcRTP"],
            swiftSettings: strict),
        .testTarget(
            name: "RtcFileTransferTests",
            dependencies: ["RtcFileTransfer", "RtcPeer", "FileSafety", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "InteropTests",
            dependencies: ["TestSupport", "RtcPeer", "RtcMediaFiles", "ExpressServer", "CarrierNode"],
            swiftSettings: strict),
        .testTarget(
            name: "SamplesTests",
            dependencies: [
                "TestSupport", "OfflineAndFiles", "DataChannelFile", "CallOverSocket", "LiveMedia", "FriendsAndCalls",
                "Identity", "PortForwarding",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "CLITests",
            dependencies: ["TestSupport", "CarrierCLI", "RtcMediaFiles"],
            swiftSettings: strict),
    ]
)

if fuzzing {
    package.targets.append(
        .executableTarget(
            name: "CarrierFuzz", dependencies: ["FuzzTargets"], path: "Fuzz/CarrierFuzz", swiftSettings: strict))
    package.products.append(.executable(name: "carrier-fuzz", targets: ["CarrierFuzz"]))
}
