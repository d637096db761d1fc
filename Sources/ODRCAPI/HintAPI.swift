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

/// `odr_hint_end`: Withdraws the hint and frees it (NULL is ignored). Documented in odr.h.
@_cdecl("odr_hint_end")
public func odrHintEnd(_ handle: OpaquePointer?) {
    guard let hint = CHandle.release(handle, as: ResourceHint.self) else { return }
    try? hint.end()
    LiveHandles.hintEnded()
}
