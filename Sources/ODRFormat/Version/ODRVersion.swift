/// The version of swift-odr: what `--version` prints in every tool, the C API's `odr_version()`,
/// and the `User-Agent` of every request the runtime and `odrpack publish` make.
public enum ODRVersion {
    /// The release, as `MAJOR.MINOR.PATCH`.
    public static let current = "0.1.0"

    /// The `User-Agent` header of a component: `swift-odr/0.1.0` or `odrpack/0.1.0 (swift-odr)`.
    public static func userAgent(_ component: String = "swift-odr") -> String {
        component == "swift-odr" ? "swift-odr/\(current)" : "\(component)/\(current) (swift-odr)"
    }
}
