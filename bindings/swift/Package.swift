// swift-tools-version:5.7
// The Swift binding of mpudp's C ABI. Build the library first for the targets you ship
// (bindings/README.md: `cargo build --release -p mpudp-ffi --target aarch64-apple-ios`), and
// link `libmpudp_ffi.a` into the app (Xcode: Link Binary With Libraries), or wrap it in an
// XCFramework.
import PackageDescription

let package = Package(
    name: "MpUdp",
    platforms: [.iOS(.v13), .macOS(.v11)],
    products: [.library(name: "MpUdp", targets: ["MpUdp"])],
    targets: [
        .target(name: "CMpUdp", path: "Sources/CMpUdp"),
        .target(name: "MpUdp", dependencies: ["CMpUdp"], path: "Sources/MpUdp"),
    ]
)
