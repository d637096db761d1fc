import CODR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRRuntime

/// `odr_anticipate`: Hints that tags will probably be requested soon. Documented in odr.h.
@_cdecl("odr_anticipate")
public func odrAnticipate(
    _ manager: OpaquePointer?, _ tags: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ likelihood: Double,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(manager, as: ManagerHandle.self, "manager").manager
        let tags = try CInput.tags(tags, count: count)
        let out = try CInput.out(out, "out_hint")
        let hint = try manager.anticipate(tags: tags, likelihood: likelihood)
        out.pointee = CHandle.make(hint)
        LiveHandles.hintCreated()
    }
}

/// `odr_manager_prefetch_measure`: The share of hinted prefetched bytes requests used. Documented in odr.h.
@_cdecl("odr_manager_prefetch_measure")
public func odrManagerPrefetchMeasure(
    _ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Double>?, _ judged: UnsafeMutablePointer<Int64>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let out = try CInput.out(out, "out_measure")
        let learning = manager.prefetchLearning
        out.pointee = learning.measure
        judged?.pointee = learning.judgedBytes < 9.2e18 ? Int64(learning.judgedBytes.rounded()) : Int64.max
    }
}

/// `odr_hint_end`: Withdraws the hint and frees it (NULL is ignored). Documented in odr.h.
@_cdecl("odr_hint_end")
public func odrHintEnd(_ handle: OpaquePointer?) {
    guard let hint = CHandle.release(handle, as: ResourceHint.self) else { return }
    try? hint.end()
    LiveHandles.hintEnded()
}
