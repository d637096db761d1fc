#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <stddef.h>
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a destructor pointer, which Swift cannot import:
// these wrappers bind a copy of the bytes (SQLite copies them before returning). Lengths are
// 64-bit, so no Swift count is narrowed on the way in. A NULL pointer (Swift's empty buffer) binds
// an empty value, not SQL NULL, as sqlite3_bind_text64 and sqlite3_bind_blob64 would.

static inline int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, sqlite3_uint64 length) {
    return sqlite3_bind_text64(statement, index, text ? text : "", text ? length : 0, SQLITE_TRANSIENT, SQLITE_UTF8);
}

static inline int csqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, sqlite3_uint64 length) {
    if (bytes == NULL || length == 0) return sqlite3_bind_zeroblob(statement, index, 0);
    return sqlite3_bind_blob64(statement, index, bytes, length, SQLITE_TRANSIENT);
}

#endif
