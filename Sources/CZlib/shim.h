#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H

#include <zlib.h>

// deflateInit2 and inflateInit2 are macros that pass the library version and the struct size;
// Swift cannot call macros, so these typed wrappers do it for us.

/// Raw deflate (no zlib/gzip header), as a ZIP entry stores it: windowBits = -15.
static inline int czlib_deflate_init_raw(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
}

/// Raw inflate (no zlib/gzip header), as a ZIP entry stores it: windowBits = -15.
static inline int czlib_inflate_init_raw(z_streamp stream) {
    return inflateInit2(stream, -MAX_WBITS);
}

#endif
