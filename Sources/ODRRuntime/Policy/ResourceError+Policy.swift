extension ResourceError.Code {
    /// The ``DownloadPolicy`` forbids the download and the caller asked not to wait
    /// (``DownloadPolicy/waitsWhenForbidden`` `false`, `odr fetch --no-metered`): the network is
    /// metered and metered downloads of this urgency are not allowed, or the day's metered byte
    /// budget is spent. The message names the setting that allows it. Nothing was downloaded.
    public static let networkPolicy = ResourceError.Code(rawValue: "network-policy")
}
