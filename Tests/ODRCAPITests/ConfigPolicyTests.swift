import CODR
import Foundation
@testable import ODRCAPI
import ODRRuntime
import Testing

/// The download-policy options of `odr_config_set_int` reach the manager's configuration, and a
/// refused value changes nothing.
struct ConfigPolicyTests {
    @Test func policyOptionsSetTheManagersDownloadPolicy() throws {
        var config: OpaquePointer?
        #expect(odrConfigCreate(&config) == ODR_OK)
        defer { odrConfigFree(config) }
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_URL, "http://127.0.0.1:1/") == ODR_OK)
        #expect(odrConfigSetString(config, ODR_OPT_STORE_DIRECTORY, "/tmp/odr-config-policy") == ODR_OK)
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")

        let defaults = try handle.configuration().downloadPolicy
        #expect(defaults == DownloadPolicy())

        #expect(odrConfigSetInt(config, ODR_OPT_METERED_URGENT, 0) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_METERED_NON_URGENT, 1) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_METERED_DAILY_BUDGET, 5_000_000) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_POLICY_WAITS, 0) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_NON_URGENT_RATE, 65_536) == ODR_OK)
        var policy = try handle.configuration().downloadPolicy
        #expect(!policy.allowsMeteredUrgent && policy.allowsMeteredNonUrgent && !policy.waitsWhenForbidden)
        #expect(policy.dailyMeteredByteBudget == 5_000_000)
        #expect(policy.nonUrgentBandwidthWhileUrgent == .limited(bytesPerSecond: 65_536))

        #expect(odrConfigSetInt(config, ODR_OPT_METERED_NON_URGENT, 3) == ODR_E_INVALID_ARGUMENT)
        #expect(odrConfigSetInt(config, ODR_OPT_NON_URGENT_RATE, -1) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_METERED_DAILY_BUDGET, -1) == ODR_OK)
        policy = try handle.configuration().downloadPolicy
        #expect(policy.allowsMeteredNonUrgent, "a refused value changes nothing")
        #expect(policy.nonUrgentBandwidthWhileUrgent == .unlimited && policy.dailyMeteredByteBudget == nil)
    }

    @Test func timeoutOptionsSetTheManagersTimeoutsAndRefuseOutOfRangeValues() throws {
        var config: OpaquePointer?
        #expect(odrConfigCreate(&config) == ODR_OK)
        defer { odrConfigFree(config) }
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_URL, "http://127.0.0.1:1/") == ODR_OK)
        #expect(odrConfigSetString(config, ODR_OPT_STORE_DIRECTORY, "/tmp/odr-config-timeouts") == ODR_OK)
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        var configuration = try handle.configuration()
        #expect(configuration.connectTimeout == 5 && configuration.firstByteTimeout == 5 && configuration.failoverStallTimeout == 5)

        #expect(odrConfigSetInt(config, ODR_OPT_CONNECT_TIMEOUT_MS, 2_500) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_FIRST_BYTE_TIMEOUT_MS, 12_000) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_FAILOVER_STALL_TIMEOUT_MS, 0) == ODR_OK)
        configuration = try handle.configuration()
        #expect(configuration.connectTimeout == 2.5 && configuration.firstByteTimeout == 12)
        #expect(configuration.failoverStallTimeout == .infinity)

        for (option, value) in [(ODR_OPT_CONNECT_TIMEOUT_MS, Int64(0)), (ODR_OPT_CONNECT_TIMEOUT_MS, 600_001),
                                (ODR_OPT_FIRST_BYTE_TIMEOUT_MS, -1), (ODR_OPT_FAILOVER_STALL_TIMEOUT_MS, 99)] {
            #expect(odrConfigSetInt(config, option, value) == ODR_E_INVALID_ARGUMENT, "\(option.rawValue) = \(value)")
        }
        configuration = try handle.configuration()
        #expect(configuration.connectTimeout == 2.5 && configuration.firstByteTimeout == 12, "a refused value changes nothing")
    }

    @Test func discoveryOptionsSetTheManagersDiscoveryAndRefuseOtherValues() throws {
        var config: OpaquePointer?
        #expect(odrConfigCreate(&config) == ODR_OK)
        defer { odrConfigFree(config) }
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_URL, "http://127.0.0.1:1/") == ODR_OK)
        #expect(odrConfigSetString(config, ODR_OPT_STORE_DIRECTORY, "/tmp/odr-config-discovery") == ODR_OK)
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        var configuration = try handle.configuration()
        #expect(!configuration.discoversPeers && configuration.peerDiscoveryTimeout == ResourceManager.Configuration.defaultPeerDiscoveryTimeout, "off, and 2 s, as in Swift")

        #expect(odrConfigSetInt(config, ODR_OPT_DISCOVER_PEERS, 1) == ODR_OK)
        #expect(odrConfigSetInt(config, ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 250) == ODR_OK)
        configuration = try handle.configuration()
        #expect(configuration.discoversPeers && configuration.peerDiscoveryTimeout == 0.25)

        for (option, value) in [(ODR_OPT_DISCOVER_PEERS, Int64(2)), (ODR_OPT_DISCOVER_PEERS, -1),
                                (ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 0), (ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 99),
                                (ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 60_001)] {
            #expect(odrConfigSetInt(config, option, value) == ODR_E_INVALID_ARGUMENT, "\(option.rawValue) = \(value)")
        }
        #expect(odrConfigSetString(config, ODR_OPT_DISCOVER_PEERS, "1") == ODR_E_INVALID_ARGUMENT)
        configuration = try handle.configuration()
        #expect(configuration.discoversPeers && configuration.peerDiscoveryTimeout == 0.25, "a refused value changes nothing")
        #expect(odrConfigSetInt(config, ODR_OPT_DISCOVER_PEERS, 0) == ODR_OK)
        #expect(try !handle.configuration().discoversPeers)
    }

    @Test func peerFirstByteTimeoutSetsTheManagersDeadlineAndRefusesOtherValues() throws {
        var config: OpaquePointer?
        #expect(odrConfigCreate(&config) == ODR_OK)
        defer { odrConfigFree(config) }
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_URL, "http://127.0.0.1:1/") == ODR_OK)
        #expect(odrConfigSetString(config, ODR_OPT_STORE_DIRECTORY, "/tmp/odr-config-peer-timeout") == ODR_OK)
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        #expect(try handle.configuration().peerFirstByteTimeout == PeerSet.defaultFirstByteSeconds, "0.1 s, as in Swift")
        #expect(odrConfigSetInt(config, ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS, 400) == ODR_OK)
        #expect(try handle.configuration().peerFirstByteTimeout == 0.4)
        for value: Int64 in [0, 9, 60_001, -1] {
            #expect(odrConfigSetInt(config, ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS, value) == ODR_E_INVALID_ARGUMENT, "\(value)")
        }
        #expect(try handle.configuration().peerFirstByteTimeout == 0.4, "a refused value changes nothing")
    }

    @Test func catalogIDOptionNamesTheCatalogAndNullForgetsIt() throws {
        var config: OpaquePointer?
        #expect(odrConfigCreate(&config) == ODR_OK)
        defer { odrConfigFree(config) }
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_URL, "http://127.0.0.1:1/") == ODR_OK)
        #expect(odrConfigSetString(config, ODR_OPT_STORE_DIRECTORY, "/tmp/odr-config-catalog-id") == ODR_OK)
        let handle = try CHandle.object(config, as: ConfigHandle.self, "config")
        #expect(try handle.configuration().catalogID == nil)

        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_ID, "my-game") == ODR_OK)
        #expect(try handle.configuration().catalogID == "my-game")
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_ID, "") == ODR_E_INVALID_ARGUMENT)
        #expect(odrConfigSetInt(config, ODR_OPT_CATALOG_ID, 1) == ODR_E_INVALID_ARGUMENT)
        #expect(try handle.configuration().catalogID == "my-game", "a refused value changes nothing")
        #expect(odrConfigSetString(config, ODR_OPT_CATALOG_ID, nil) == ODR_OK)
        #expect(try handle.configuration().catalogID == nil)
    }
}
