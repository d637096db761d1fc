import CODR
import Dispatch
import ODRRuntime

extension ConfigHandle {
    /// Applies one of the download-policy options (`ODR_OPT_METERED_*`, `ODR_OPT_POLICY_WAITS`,
    /// `ODR_OPT_NON_URGENT_RATE`) to `policy`; `invalid-argument` naming the accepted values
    /// otherwise, and `policy` stays as it was.
    static func set(_ option: odr_option, _ value: Int64, in policy: inout DownloadPolicy) throws(ResourceError) {
        func flag(_ name: String) throws(ResourceError) -> Bool {
            guard value == 0 || value == 1 else { throw invalidArgument("\(name) must be 0 or 1; \(value) is neither.") }
            return value == 1
        }
        switch option {
        case ODR_OPT_METERED_URGENT:
            policy.allowsMeteredUrgent = try flag("ODR_OPT_METERED_URGENT")
        case ODR_OPT_METERED_NON_URGENT:
            policy.allowsMeteredNonUrgent = try flag("ODR_OPT_METERED_NON_URGENT")
        case ODR_OPT_POLICY_WAITS:
            policy.waitsWhenForbidden = try flag("ODR_OPT_POLICY_WAITS")
        case ODR_OPT_METERED_DAILY_BUDGET:
            guard value >= -1 else {
                throw invalidArgument("ODR_OPT_METERED_DAILY_BUDGET must be -1 (no limit) or a byte count; \(value) is neither.")
            }
            policy.dailyMeteredByteBudget = value < 0 ? nil : CInput.bytes(value)
        case ODR_OPT_NON_URGENT_RATE:
            guard value >= -1 else {
                throw invalidArgument("ODR_OPT_NON_URGENT_RATE must be 0 (pause non-urgent downloads while an urgent one runs), -1 (no limit) or bytes per second; \(value) is none of these.")
            }
            policy.nonUrgentBandwidthWhileUrgent = switch value {
            case 0: .paused
            case -1: .unlimited
            default: .limited(bytesPerSecond: CInput.bytes(value))
            }
        default:
            throw invalidArgument("Option \(option.rawValue) is not a download-policy option.")
        }
    }
}
