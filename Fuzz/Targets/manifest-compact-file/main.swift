import CLibFuzzer
import Foundation
import ODRFuzzing

/// libFuzzer's entry: one input through FuzzTarget.manifestCompactFile (docs: CONTRIBUTING.md, "Fuzzing").
@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    try? FuzzTarget.manifestCompactFile.run(UnsafeRawBufferPointer(start: bytes, count: count))
    return 0
}

exit(odr_fuzz_run(CommandLine.argc, CommandLine.unsafeArgv, fuzz))
