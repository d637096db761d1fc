#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// The URLs of a catalog's files, from the base URL the app was given.
///
/// The base is the directory that holds `catalog.json`; a URL that names `catalog.json` itself is
/// accepted too. Either way the store keys the catalog by the directory URL ending in `/`.
enum CatalogLocation {
    /// The directory URL of the catalog at `url`, ending in `/`.
    static func base(_ url: URL) -> URL {
        var text = url.absoluteString
        if text.hasSuffix("/" + CatalogIndex.fileName) { text.removeLast(CatalogIndex.fileName.count) }
        if !text.hasSuffix("/") { text += "/" }
        return URL(string: text) ?? url
    }

    /// The key of the catalog at `url` in the store's tables.
    static func key(_ url: URL) -> String { base(url).absoluteString }

    /// The URL of `relative` (`versions/3.json`, `packs/<id>.zip`) in the catalog at `url`.
    static func url(of relative: String, in url: URL) -> URL {
        URL(string: relative, relativeTo: base(url))?.absoluteURL ?? base(url).appending(path: relative)
    }
}
