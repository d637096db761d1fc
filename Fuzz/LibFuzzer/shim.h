// libFuzzer's driver, for the fuzz executables (linked by -sanitize=fuzzer; docs: CONTRIBUTING.md).
//
// SwiftPM gives every executable its own `main` (the module's top-level code), so the `main` of
// libFuzzer's runtime is never linked: each target's top-level code starts the driver instead.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

/// Runs libFuzzer with the process's arguments, feeding each input to `callback`.
static inline int odr_fuzz_run(int argc, char **argv, int (*callback)(const uint8_t *data, size_t size)) {
    return LLVMFuzzerRunDriver(&argc, &argv, callback);
}
