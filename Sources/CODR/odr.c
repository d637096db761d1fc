// The C API's header lives in this target so that the Swift implementation (ODRCAPI) and its C
// callers see the same declarations. The functions are defined in Swift with `@_cdecl`; this file
// only makes the header compile as C with the package's warnings, and holds no code.
#include "odr.h"
