// What the documentation's samples take as given: the game's own functions and the values the text
// around a sample names (the catalog's URL, a staging folder, the bytes of a download). The samples
// themselves are generated into Generated/ by scripts/doc-samples.py and only compiled, never run,
// so these are declarations of the right types, not working values. Each sample sees only its own
// imports; these globals are visible to it without one (CONTRIBUTING.md, "Code samples").
import Foundation
import ODRFormat
import ODRRuntime

// MARK: The game's own functions

/// Shows a loading screen's progress (docs/RUNTIME.md, the game loop).
func showProgress(_ fraction: Double) {}
/// Plays a level from its map.
func play(_ map: Data) throws {}
/// Shows a message to the player.
func showBanner(_ text: String) {}

// MARK: The app's values

/// The catalog's base URL on the CDN.
let cdn = URL(string: "https://cdn.example.com/mygame/")!
/// The store directory.
let store = URL(filePath: "/tmp/mygame/odr")
/// The app's data folder (docs/STORE.md).
let appSupport = URL(filePath: "/tmp/mygame")
/// A catalog folder shipped inside the app.
let bundleCatalogFolder: URL? = nil
/// A manager configuration, and the manager made from it.
nonisolated(unsafe) var configuration = ResourceManager.Configuration(catalogURL: cdn, storeDirectory: store)
nonisolated(unsafe) let manager: ResourceManager! = nil
/// An access token some CDNs want (docs/TRANSFERS.md).
let token = ""

// MARK: Catalogs and packs (docs/FORMAT.md, docs/TRANSFERS.md, ODRFormat)

/// A catalog folder, and its base URL.
let root = URL(filePath: "/tmp/catalog")
let catalogBase = URL(string: "https://cdn.example.com/mygame/")!
/// `catalog.json` and a version manifest as downloaded.
let catalogData = Data()
let manifestData = Data()
nonisolated(unsafe) let index: CatalogIndex! = nil
nonisolated(unsafe) let manifest: VersionManifest! = nil
/// A pack of the manifest, and its id.
nonisolated(unsafe) let pack: PackRecord! = nil
let id = ""
/// Where a pack is extracted, a download is kept, and a pack is written.
let staging = URL(filePath: "/tmp/staging")
let stagingFile = URL(filePath: "/tmp/staging/pack.zip")
let temporary = URL(filePath: "/tmp/pack.zip")
/// A pack's bytes as they arrive: already received, and as a stream.
let chunks: [Data] = []
let download = AsyncThrowingStream<Data, any Error> { $0.finish() }
/// Files to pack, by entry name in ascending order.
let sortedFiles: [(String, URL)] = []
