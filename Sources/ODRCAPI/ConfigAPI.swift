import CODR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import ODRFormat
import ODRRuntime

/// What an `odr_config` holds: the settings of ``ResourceManager/Configuration`` a C caller can set.
final class ConfigHandle: Sendable {
    struct Settings {
        var catalogURL: URL?
        var storeDirectory: URL?
        var distribution = "live"
        var bundledCatalog: URL?
        var inUseLimit = Ledger.defaultInUseLimit
        var cacheBudget: Int64?
        var freeSpaceWatermark: Int64 = 256 << 20
        var maximumConcurrentTransfers = 4
        var headers: [String: String] = [:]
        var trustedKeys: [PublicSigningKey] = []
        var signatureThreshold = 1
        var mirrors: [URL] = []
        var peers: [URL] = []
        /// `ODR_OPT_DISCOVER_PEERS` and `ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS` (in seconds).
        var discoversPeers = false
        var peerDiscoveryTimeout = ResourceManager.Configuration.defaultPeerDiscoveryTimeout
        /// `ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS` (in seconds).
        var peerFirstByteTimeout = PeerSet.defaultFirstByteSeconds
        var allowsUnsignedCatalogFromMirrors = false
        /// `ODR_OPT_CATALOG_ID`: the catalog meant (`nil`: the one the URLs serve).
        var catalogID: String?
        /// `ODR_OPT_CONNECT_TIMEOUT_MS`, `ODR_OPT_FIRST_BYTE_TIMEOUT_MS`,
        /// `ODR_OPT_FAILOVER_STALL_TIMEOUT_MS`, in seconds (`.infinity`: no limit).
        var connectTimeout = TransferEngine.Configuration().connectTimeout
        var firstByteTimeout = TransferEngine.Configuration().firstByteTimeout
        var failoverStallTimeout = TransferEngine.Configuration().failoverStallTimeout
        var downloadPolicy = DownloadPolicy()
        var variants = VariantPreferences()
        /// `ODR_OPT_NETWORK_METERED`: a fixed answer, or `nil` (-1) to ask NetworkManager.
        var fixedNetwork: NetworkCondition?
        /// `odr_config_set_network_probe`'s function and pointer.
        var probe: (function: odr_network_probe, userData: UnsafeMutableRawPointer?)?
    }

    let settings = Locked(Settings())

    /// The manager configuration, or `invalid-argument` naming the required option that is missing.
    func configuration() throws(ResourceError) -> ResourceManager.Configuration {
        let settings = self.settings.withLock { $0 }
        guard let catalogURL = settings.catalogURL else {
            throw invalidArgument("ODR_OPT_CATALOG_URL is not set; set the catalog's URL with odr_config_set_string.")
        }
        guard let storeDirectory = settings.storeDirectory else {
            throw invalidArgument("ODR_OPT_STORE_DIRECTORY is not set; set where installed packs live with odr_config_set_string.")
        }
        var configuration = ResourceManager.Configuration(catalogURL: catalogURL, storeDirectory: storeDirectory)
        configuration.distribution = settings.distribution
        configuration.bundledCatalog = settings.bundledCatalog
        configuration.inUseLimit = settings.inUseLimit
        configuration.cacheBudget = settings.cacheBudget
        configuration.freeSpaceWatermark = settings.freeSpaceWatermark
        configuration.maximumConcurrentTransfers = settings.maximumConcurrentTransfers
        configuration.extraHeaders = settings.headers
        configuration.trustedKeys = settings.trustedKeys
        configuration.signatureThreshold = settings.signatureThreshold
        configuration.downloadPolicy = settings.downloadPolicy
        configuration.variants = settings.variants
        configuration.mirrors = settings.mirrors
        configuration.peers = settings.peers
        configuration.discoversPeers = settings.discoversPeers
        configuration.peerDiscoveryTimeout = settings.peerDiscoveryTimeout
        configuration.peerFirstByteTimeout = settings.peerFirstByteTimeout
        configuration.allowsUnsignedCatalogFromMirrors = settings.allowsUnsignedCatalogFromMirrors
        configuration.catalogID = settings.catalogID
        configuration.connectTimeout = settings.connectTimeout
        configuration.firstByteTimeout = settings.firstByteTimeout
        configuration.failoverStallTimeout = settings.failoverStallTimeout
        if let fixed = settings.fixedNetwork { configuration.networkProbe = FixedNetworkProbe(fixed) }
        return configuration
    }

    /// A trusted key from its 64 hex digits or from the path of a `NAME.pub` file.
    static func trustedKey(_ text: String) throws(ResourceError) -> PublicSigningKey {
        let isHex = text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0 | 0x20) }
        do {
            return isHex ? try PublicSigningKey(hex: text) : try PublicSigningKey.load(from: URL(filePath: text))
        } catch {
            throw ResourceError(.invalidArgument,
                                "ODR_OPT_TRUSTED_KEY '\(text)' is neither the 64 hex digits of an Ed25519 public key nor a readable NAME.pub file: \(error.message)",
                                cause: error)
        }
    }

    /// One axis's choice, `axis=value[,value...]`, or `invalid-argument` saying how to write it.
    static func variantChoice(_ text: String) throws(ResourceError) -> VariantPreferences {
        do throws(FormatError) {
            guard text.utf8.filter({ $0 == UInt8(ascii: "=") }).count == 1 else {
                throw FormatError(.invalidValue, "'\(text)' is not one variant choice; write axis=value[,fallback...], one axis per call, for example resolution=2x,1x.")
            }
            return try VariantPreferences.parse([text])
        } catch {
            throw ResourceError(.invalidArgument, "ODR_OPT_VARIANT: \(error.message)", cause: error)
        }
    }

    /// Whether `text` could break a header line (CR, LF).
    static func breaksHeaderLine(_ text: String) -> Bool {
        text.utf8.contains { $0 == 0x0D || $0 == 0x0A }
    }
}

/// `odr_config_create`: Creates a configuration with the defaults. Documented in odr.h.
@_cdecl("odr_config_create")
public func odrConfigCreate(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        try CInput.out(out, "out_config").pointee = CHandle.make(ConfigHandle())
    }
}

/// `odr_config_free`: Frees a configuration (NULL is ignored). Documented in odr.h.
@_cdecl("odr_config_free")
public func odrConfigFree(_ config: OpaquePointer?) {
    _ = CHandle.release(config, as: ConfigHandle.self)
}

/// `odr_config_set_string`: Sets a string option. Documented in odr.h.
@_cdecl("odr_config_set_string")
public func odrConfigSetString(_ config: OpaquePointer?, _ option: odr_option, _ value: UnsafePointer<CChar>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        switch option {
        case ODR_OPT_CATALOG_URL:
            let text = try CInput.nonEmptyString(value, "The catalog URL (ODR_OPT_CATALOG_URL)")
            handle.settings.withLock { $0.catalogURL = ResourceManager.Configuration.catalogURL(parsing: text) }
        case ODR_OPT_STORE_DIRECTORY:
            let path = try CInput.nonEmptyString(value, "The store directory (ODR_OPT_STORE_DIRECTORY)")
            handle.settings.withLock { $0.storeDirectory = URL(filePath: path, directoryHint: .isDirectory) }
        case ODR_OPT_DISTRIBUTION:
            let name = try CInput.nonEmptyString(value, "The distribution (ODR_OPT_DISTRIBUTION)")
            handle.settings.withLock { $0.distribution = name }
        case ODR_OPT_BUNDLED_CATALOG:
            let path = try value.map { p throws(ResourceError) in try CInput.nonEmptyString(p, "The bundled catalog (ODR_OPT_BUNDLED_CATALOG)") }
            handle.settings.withLock { $0.bundledCatalog = path.map { URL(filePath: $0, directoryHint: .isDirectory) } }
        case ODR_OPT_TRUSTED_KEY:
            guard let value else {
                handle.settings.withLock { $0.trustedKeys = [] }
                return
            }
            let key = try ConfigHandle.trustedKey(try CInput.nonEmptyString(value, "The trusted key (ODR_OPT_TRUSTED_KEY)"))
            handle.settings.withLock { if !$0.trustedKeys.contains(key) { $0.trustedKeys.append(key) } }
        case ODR_OPT_VARIANT:
            guard let value else {
                handle.settings.withLock { $0.variants = VariantPreferences() }
                return
            }
            let choice = try ConfigHandle.variantChoice(try CInput.nonEmptyString(value, "The variant choice (ODR_OPT_VARIANT)"))
            handle.settings.withLock { $0.variants.values.merge(choice.values) { _, new in new } }
        case ODR_OPT_MIRROR:
            guard let value else {
                handle.settings.withLock { $0.mirrors = [] }
                return
            }
            let text = try CInput.nonEmptyString(value, "The mirror (ODR_OPT_MIRROR)")
            guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw invalidArgument("ODR_OPT_MIRROR '\(text)' is not an http:// or https:// URL; give the URL of the catalog's folder on the other origin.")
            }
            handle.settings.withLock { if !$0.mirrors.contains(url) { $0.mirrors.append(url) } }
        case ODR_OPT_PEER:
            guard let value else {
                handle.settings.withLock { $0.peers = [] }
                return
            }
            let text = try CInput.nonEmptyString(value, "The peer (ODR_OPT_PEER)")
            guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw invalidArgument("ODR_OPT_PEER '\(text)' is not an http:// or https:// URL; give the URL odr share printed on the other device, such as http://192.168.1.20:7420/.")
            }
            handle.settings.withLock { if !$0.peers.contains(url) { $0.peers.append(url) } }
        case ODR_OPT_CATALOG_ID:
            let id = try value.map { p throws(ResourceError) in try CInput.nonEmptyString(p, "The catalog id (ODR_OPT_CATALOG_ID)") }
            handle.settings.withLock { $0.catalogID = id }
        default:
            throw invalidArgument("Option \(option.rawValue) is not a string option; number options take odr_config_set_int.")
        }
    }
}

/// `odr_config_set_int`: Sets a number option. Documented in odr.h.
@_cdecl("odr_config_set_int")
public func odrConfigSetInt(_ config: OpaquePointer?, _ option: odr_option, _ value: Int64) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        switch option {
        case ODR_OPT_IN_USE_LIMIT:
            guard value > 0 else { throw invalidArgument("ODR_OPT_IN_USE_LIMIT must be positive; \(value) is not.") }
            handle.settings.withLock { $0.inUseLimit = CInput.bytes(value) }
        case ODR_OPT_CACHE_BUDGET:
            guard value >= -1 else { throw invalidArgument("ODR_OPT_CACHE_BUDGET must be -1 (no budget) or a byte count; \(value) is neither.") }
            handle.settings.withLock { $0.cacheBudget = value < 0 ? nil : CInput.bytes(value) }
        case ODR_OPT_FREE_SPACE_WATERMARK:
            guard value >= 0 else { throw invalidArgument("ODR_OPT_FREE_SPACE_WATERMARK must be 0 or more bytes; \(value) is not.") }
            handle.settings.withLock { $0.freeSpaceWatermark = CInput.bytes(value) }
        case ODR_OPT_MAX_CONCURRENT_TRANSFERS:
            guard (1...64).contains(value) else { throw invalidArgument("ODR_OPT_MAX_CONCURRENT_TRANSFERS must be in 1...64; \(value) is not.") }
            handle.settings.withLock { $0.maximumConcurrentTransfers = Int(value) }
        case ODR_OPT_SIGNATURE_THRESHOLD:
            // Checked against the number of keys when the manager opens, as in Swift.
            guard (1...1024).contains(value) else { throw invalidArgument("ODR_OPT_SIGNATURE_THRESHOLD must be at least 1 (and at most the number of trusted keys); \(value) is not.") }
            handle.settings.withLock { $0.signatureThreshold = Int(value) }
        case ODR_OPT_ALLOW_UNSIGNED_MIRRORS:
            guard (0...1).contains(value) else {
                throw invalidArgument("ODR_OPT_ALLOW_UNSIGNED_MIRRORS must be 0 (only the primary's unsigned catalog) or 1 (a mirror's too); \(value) is neither.")
            }
            handle.settings.withLock { $0.allowsUnsignedCatalogFromMirrors = value == 1 }
        case ODR_OPT_CONNECT_TIMEOUT_MS:
            guard (100...600_000).contains(value) else {
                throw invalidArgument("ODR_OPT_CONNECT_TIMEOUT_MS must be 100 to 600000 milliseconds; \(value) is not.")
            }
            handle.settings.withLock { $0.connectTimeout = Double(value) / 1000 }
        case ODR_OPT_FIRST_BYTE_TIMEOUT_MS, ODR_OPT_FAILOVER_STALL_TIMEOUT_MS:
            let name = option == ODR_OPT_FIRST_BYTE_TIMEOUT_MS ? "ODR_OPT_FIRST_BYTE_TIMEOUT_MS" : "ODR_OPT_FAILOVER_STALL_TIMEOUT_MS"
            guard value == 0 || (100...600_000).contains(value) else {
                throw invalidArgument("\(name) must be 0 (no limit) or 100 to 600000 milliseconds; \(value) is neither.")
            }
            let seconds = value == 0 ? Double.infinity : Double(value) / 1000
            handle.settings.withLock { settings in
                if option == ODR_OPT_FIRST_BYTE_TIMEOUT_MS { settings.firstByteTimeout = seconds } else { settings.failoverStallTimeout = seconds }
            }
        case ODR_OPT_DISCOVER_PEERS:
            guard (0...1).contains(value) else {
                throw invalidArgument("ODR_OPT_DISCOVER_PEERS must be 0 (no discovery) or 1 (also ask peers found on the local network); \(value) is neither.")
            }
            handle.settings.withLock { $0.discoversPeers = value == 1 }
        case ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS:
            guard (100...60_000).contains(value) else {
                throw invalidArgument("ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS must be 100 to 60000 milliseconds; \(value) is not.")
            }
            handle.settings.withLock { $0.peerDiscoveryTimeout = Double(value) / 1000 }
        case ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS:
            guard (10...60_000).contains(value) else {
                throw invalidArgument("ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS must be 10 to 60000 milliseconds; \(value) is not.")
            }
            handle.settings.withLock { $0.peerFirstByteTimeout = Double(value) / 1000 }
        case ODR_OPT_NETWORK_METERED:
            guard (-1...1).contains(value) else {
                throw invalidArgument("ODR_OPT_NETWORK_METERED must be -1 (ask NetworkManager), 0 (unmetered) or 1 (metered); \(value) is none of them.")
            }
            handle.settings.withLock { $0.fixedNetwork = value < 0 ? nil : value == 1 ? .metered : .unmetered }
        case ODR_OPT_METERED_URGENT, ODR_OPT_METERED_NON_URGENT, ODR_OPT_METERED_DAILY_BUDGET, ODR_OPT_POLICY_WAITS,
             ODR_OPT_NON_URGENT_RATE:
            try handle.settings.withLock { settings throws(ResourceError) in
                try ConfigHandle.set(option, value, in: &settings.downloadPolicy)
            }
        default:
            throw invalidArgument("Option \(option.rawValue) is not a number option; string options take odr_config_set_string.")
        }
    }
}

/// `odr_config_add_header`: Adds a header sent with every request for the catalog (for example "Authorization"). Documented in odr.h.
@_cdecl("odr_config_add_header")
public func odrConfigAddHeader(_ config: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        let name = try CInput.nonEmptyString(name, "The header name")
        let value = try CInput.string(value, "The header value")
        guard !name.contains(":"), !ConfigHandle.breaksHeaderLine(name), !ConfigHandle.breaksHeaderLine(value) else {
            throw invalidArgument("The header '\(name)' cannot be sent: names may not hold ':', and neither names nor values may hold CR or LF.")
        }
        handle.settings.withLock { $0.headers[name] = value }
    }
}

/// `odr_config_set_network_probe`: Sets the network probe of the managers created from config. Documented in odr.h.
@_cdecl("odr_config_set_network_probe")
public func odrConfigSetNetworkProbe(_ config: OpaquePointer?, _ probe: odr_network_probe?, _ userData: UnsafeMutableRawPointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        handle.settings.withLock { $0.probe = probe.map { ($0, userData) } }
    }
}

/// A C `odr_network_probe` as a ``NetworkConditionProbe``, which `odr_manager_destroy` revokes:
/// after ``revoke()`` returns it never calls the function again (and answers unmetered).
final class CNetworkProbe: NetworkConditionProbe, @unchecked Sendable {
    // `revoked` and `calling` are only used with `condition` locked; the function and pointer are
    // the caller's, passed back to it.
    private let function: odr_network_probe
    private let userData: UnsafeMutableRawPointer?
    private let condition = ConditionLock()
    private var revoked = false
    private var calling: pthread_t?

    init(function: odr_network_probe, userData: UnsafeMutableRawPointer?) {
        self.function = function
        self.userData = userData
    }

    func currentCondition() -> NetworkCondition {
        condition.lock()
        guard !revoked else {
            condition.unlock()
            return .unmetered
        }
        calling = pthread_self()
        condition.unlock()
        let answer = function(userData)
        condition.lock()
        calling = nil
        condition.broadcast()
        condition.unlock()
        switch answer {
        case ODR_NETWORK_METERED: return .metered
        case ODR_NETWORK_OFFLINE: return .offline
        default: return .unmetered
        }
    }

    /// Returns once the function is not running and will never be called again (at once when
    /// called from inside it).
    func revoke() {
        condition.lock()
        revoked = true
        while let thread = calling, pthread_equal(thread, pthread_self()) == 0 { condition.wait() }
        condition.unlock()
    }
}

/// `odr_version`: The linked library's version ("0.1.0"). Documented in odr.h.
@_cdecl("odr_version")
public func odrVersion() -> UnsafePointer<CChar> {
    CStatus.names[versionKey] ?? CLastError.empty
}

/// The key of the version string in ``CStatus/names``'s table (no status has it).
let versionKey = UInt32.max - 1
/// The library's version; `ODR_VERSION` in odr.h says the same.
let libraryVersion = ODRVersion.current

/// `odr_api_version`: The linked library's ODR_API_VERSION. Documented in odr.h.
@_cdecl("odr_api_version")
public func odrAPIVersion() -> Int32 { 1 }

/// `odr_status_name`: The stable name of a status, the Swift code's raw value. Documented in odr.h.
@_cdecl("odr_status_name")
public func odrStatusName(_ status: odr_status) -> UnsafePointer<CChar> {
    CStatus.name(of: status)
}

/// `odr_error_message`: The message of the most recent failed call on the calling thread ("" when none failed). Documented in odr.h.
@_cdecl("odr_error_message")
public func odrErrorMessage() -> UnsafePointer<CChar> { CLastError.message }

/// `odr_error_status`: The status of the most recent failed call on the calling thread (ODR_OK when none failed). Documented in odr.h.
@_cdecl("odr_error_status")
public func odrErrorStatus() -> odr_status { CLastError.status }

/// `odr_error_clear`: Forgets the calling thread's last error. Documented in odr.h.
@_cdecl("odr_error_clear")
public func odrErrorClear() { CLastError.clear() }
