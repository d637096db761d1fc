/// The media type the server announces for a file, chosen by its extension.
enum ContentType {
    static let fallback = "application/octet-stream"

    private static let byExtension: [String: String] = [
        "json": "application/json",
        "zip": "application/zip",
        "gz": "application/gzip",
        "tar": "application/x-tar",
        "txt": "text/plain; charset=utf-8",
        "md": "text/markdown; charset=utf-8",
        "html": "text/html; charset=utf-8",
        "htm": "text/html; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        "csv": "text/csv; charset=utf-8",
        "xml": "application/xml",
        "svg": "image/svg+xml",
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
        "ktx2": "image/ktx2",
        "wav": "audio/wav",
        "ogg": "audio/ogg",
        "mp3": "audio/mpeg",
        "mp4": "video/mp4",
        "wasm": "application/wasm",
        "pdf": "application/pdf",
        "bin": fallback,
    ]

    /// The media type for a file named `name`.
    static func forFile(named name: Substring) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return fallback }
        return byExtension[name[name.index(after: dot)...].lowercased()] ?? fallback
    }
}
