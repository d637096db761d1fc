/*
 * The checks of the C programs that test the C API (api_checks.c, variant_checks.c, ...): one line per
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

/* The configuration every check program starts from: the catalog at `url`, the store at `store`,
 * and no free-space watermark (a test machine's disk may be nearly full). The caller frees it. */
static inline odr_config *checks_config(const char *url, const char *store) {
    odr_config *config = NULL;
    odr_config_create(&config);
    odr_config_set_string(config, ODR_OPT_CATALOG_URL, url);
    odr_config_set_string(config, ODR_OPT_STORE_DIRECTORY, store);
    odr_config_set_int(config, ODR_OPT_FREE_SPACE_WATERMARK, 0);
    return config;
}

/* A manager on `checks_config(url, store)`, checked as "create the manager"; NULL if that failed. */
static inline odr_manager *checks_manager(const char *url, const char *store) {
    odr_config *config = checks_config(url, store);
    odr_manager *manager = NULL;
    EXPECT(odr_manager_create(config, &manager), ODR_OK, "create the manager");
    odr_config_free(config);
    return manager;
}

#endif
