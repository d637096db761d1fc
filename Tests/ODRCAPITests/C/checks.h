/*
 * The checks of the C programs that test the C API (api_checks.c, variant_checks.c): one line per
 * check, "ok <name>" or "FAIL <name>: ...", counted for the summary line each program prints last.
 */
#ifndef ODR_TEST_CHECKS_H
#define ODR_TEST_CHECKS_H

#include <odr.h>

#include <stdio.h>

static int checks, failures;

static void check(int ok, const char *name, odr_status got, odr_status expected) {
    checks++;
    if (ok) {
        printf("ok %s\n", name);
    } else {
        failures++;
        printf("FAIL %s: got %s, expected %s; last error: %s\n", name, odr_status_name(got), odr_status_name(expected), odr_error_message());
    }
}

/* A call must return `expected`; a failure must also leave a message and the status on this thread. */
#define EXPECT(call, expected, name) do { \
        odr_status got_ = (call); \
        int ok_ = got_ == (expected); \
        if (ok_ && (expected) != ODR_OK) ok_ = odr_error_status() == (expected) && odr_error_message()[0] != '\0'; \
        check(ok_, (name), got_, (expected)); \
    } while (0)

#define TRUE_THAT(condition, name) check((condition), (name), ODR_OK, ODR_OK)

#endif
