/*
 * The C API's contract, checked from C: every bad input is a documented code (never a crash), the
 * last error is per thread, requests follow their states, events and purges are reported.
 *
 *   api_checks CATALOG-URL STORE-DIRECTORY
 *
 * Run by CAPIContractTests against the sample game on a slowed loopback server. Prints one line per
 * check ("ok <name>" or "FAIL <name>: ..."), then "checks: <n> failed: <m>"; exits 1 if any failed.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <odr.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "checks.h"

static void frame(void) {
    struct timespec wait = { 0, 5000000L };
    nanosleep(&wait, NULL);
}

typedef struct outcome {
    atomic_int finished;
    atomic_int status;
} outcome;

static void done(odr_status status, const char *message, void *user_data) {
    outcome *result = user_data;
    (void)message;
    atomic_store(&result->status, (int)status);
    atomic_store(&result->finished, 1);
}

/* Waits (polling, as a frame loop does) until `result` is in, at most a minute. */
static int wait_for(outcome *result) {
    for (int i = 0; i < 12000 && !atomic_load(&result->finished); i++) frame();
    return atomic_load(&result->finished);
}

static odr_request_state state_of(odr_request *request) {
    odr_request_state state = (odr_request_state)-1;
    odr_request_state_get(request, &state);
    return state;
}

/* Waits until the request is in `state`, at most a minute. */
static int wait_for_state(odr_request *request, odr_request_state state) {
    for (int i = 0; i < 12000 && state_of(request) != state; i++) frame();
    return state_of(request) == state;
}

static odr_request *request_for(odr_manager *manager, const char *tag) {
    const char *const tags[] = { tag };
    odr_request *request = NULL;
    odr_request_create(manager, tags, 1, &request);
    return request;
}

/* In another thread: fails a call, so that thread's last error is set. */
static void *fail_elsewhere(void *unused) {
    (void)unused;
    odr_config_create(NULL);
    return (void *)(intptr_t)(odr_error_status() == ODR_E_INVALID_ARGUMENT);
}

static void library_checks(void) {
    TRUE_THAT(strcmp(odr_version(), ODR_VERSION) == 0, "odr_version() is ODR_VERSION");
    TRUE_THAT(odr_api_version() == ODR_API_VERSION, "odr_api_version() is ODR_API_VERSION");
    TRUE_THAT(strcmp(odr_status_name(ODR_E_INVALID_TAG), "invalid-tag") == 0, "status names are the Swift codes");
    TRUE_THAT(strcmp(odr_status_name(ODR_OK), "ok") == 0, "ODR_OK is named ok");
    TRUE_THAT(strcmp(odr_status_name((odr_status)12345), "unknown-status") == 0, "a value that is no status is unknown-status");

    /* The last error is per thread. */
    odr_error_clear();
    TRUE_THAT(odr_error_status() == ODR_OK && odr_error_message()[0] == '\0', "no error after odr_error_clear");
    pthread_t thread;
    void *failed_there = NULL;
    pthread_create(&thread, NULL, fail_elsewhere, NULL);
    pthread_join(thread, &failed_there);
    TRUE_THAT(failed_there != NULL, "a failing call sets its own thread's error");
    TRUE_THAT(odr_error_status() == ODR_OK && odr_error_message()[0] == '\0', "another thread's error is not this thread's");
}

static void config_checks(void) {
    odr_config *config = NULL;
    EXPECT(odr_config_create(NULL), ODR_E_INVALID_ARGUMENT, "config_create(NULL out)");
    EXPECT(odr_config_set_string(NULL, ODR_OPT_CATALOG_URL, "http://x/"), ODR_E_INVALID_ARGUMENT, "set_string on a NULL config");
    EXPECT(odr_config_set_int(NULL, ODR_OPT_IN_USE_LIMIT, 1), ODR_E_INVALID_ARGUMENT, "set_int on a NULL config");
    EXPECT(odr_config_create(&config), ODR_OK, "config_create");
    EXPECT(odr_config_set_string(config, ODR_OPT_CATALOG_URL, NULL), ODR_E_INVALID_ARGUMENT, "a NULL catalog URL");
    EXPECT(odr_config_set_string(config, ODR_OPT_CATALOG_URL, ""), ODR_E_INVALID_ARGUMENT, "an empty catalog URL");
    EXPECT(odr_config_set_string(config, ODR_OPT_STORE_DIRECTORY, "/tmp/\xff\xfe"), ODR_E_INVALID_ARGUMENT, "a store directory that is not UTF-8");
    EXPECT(odr_config_set_string(config, ODR_OPT_IN_USE_LIMIT, "1"), ODR_E_INVALID_ARGUMENT, "a number option set as a string");
    EXPECT(odr_config_set_int(config, ODR_OPT_CATALOG_URL, 1), ODR_E_INVALID_ARGUMENT, "a string option set as a number");
    EXPECT(odr_config_set_int(config, (odr_option)9999, 1), ODR_E_INVALID_ARGUMENT, "an unknown option");
    EXPECT(odr_config_set_int(config, ODR_OPT_IN_USE_LIMIT, 0), ODR_E_INVALID_ARGUMENT, "an in-use limit of 0");
    EXPECT(odr_config_set_int(config, ODR_OPT_MAX_CONCURRENT_TRANSFERS, 0), ODR_E_INVALID_ARGUMENT, "0 concurrent transfers");
    EXPECT(odr_config_set_int(config, ODR_OPT_CACHE_BUDGET, -2), ODR_E_INVALID_ARGUMENT, "a cache budget of -2");
    EXPECT(odr_config_set_int(config, ODR_OPT_FREE_SPACE_WATERMARK, INT64_MAX), ODR_OK, "a watermark of INT64_MAX");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_URGENT, 2), ODR_E_INVALID_ARGUMENT, "ODR_OPT_METERED_URGENT of 2");
    TRUE_THAT(strstr(odr_error_message(), "0 or 1") != NULL, "the message says a metered flag is 0 or 1");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_NON_URGENT, -1), ODR_E_INVALID_ARGUMENT, "ODR_OPT_METERED_NON_URGENT of -1");
    EXPECT(odr_config_set_int(config, ODR_OPT_POLICY_WAITS, 7), ODR_E_INVALID_ARGUMENT, "ODR_OPT_POLICY_WAITS of 7");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_DAILY_BUDGET, -2), ODR_E_INVALID_ARGUMENT, "a metered budget of -2");
    EXPECT(odr_config_set_int(config, ODR_OPT_NON_URGENT_RATE, -5), ODR_E_INVALID_ARGUMENT, "a non-urgent rate of -5");
    EXPECT(odr_config_set_string(config, ODR_OPT_METERED_URGENT, "1"), ODR_E_INVALID_ARGUMENT, "a policy option set as a string");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_URGENT, 1), ODR_OK, "ODR_OPT_METERED_URGENT of 1");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_NON_URGENT, 0), ODR_OK, "ODR_OPT_METERED_NON_URGENT of 0");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_DAILY_BUDGET, -1), ODR_OK, "no metered budget");
    EXPECT(odr_config_set_int(config, ODR_OPT_METERED_DAILY_BUDGET, 100000000), ODR_OK, "a metered budget of 100 MB");
    EXPECT(odr_config_set_int(config, ODR_OPT_NON_URGENT_RATE, 65536), ODR_OK, "a non-urgent rate of 64 KiB/s");
    EXPECT(odr_config_set_int(config, ODR_OPT_NON_URGENT_RATE, 0), ODR_OK, "non-urgent downloads paused");
    EXPECT(odr_config_set_int(config, ODR_OPT_POLICY_WAITS, 1), ODR_OK, "a forbidden download waits");
    TRUE_THAT(strcmp(odr_status_name(ODR_E_NETWORK_POLICY), "network-policy") == 0, "ODR_E_NETWORK_POLICY is network-policy");
    EXPECT(odr_config_add_header(config, "X-Evil", "a\r\nHost: elsewhere"), ODR_E_INVALID_ARGUMENT, "a header value with CR LF");
    EXPECT(odr_config_add_header(config, "X:Y", "1"), ODR_E_INVALID_ARGUMENT, "a header name with ':'");
    EXPECT(odr_config_add_header(config, NULL, "1"), ODR_E_INVALID_ARGUMENT, "a NULL header name");
    EXPECT(odr_config_add_header(config, "X-Game", "c-checks"), ODR_OK, "a good header");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution"), ODR_E_INVALID_ARGUMENT, "a variant choice without '='");
    TRUE_THAT(strstr(odr_error_message(), "axis=value") != NULL, "the message says how to write a variant choice");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution="), ODR_E_INVALID_ARGUMENT, "a variant choice without a value");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution=2x,"), ODR_E_INVALID_ARGUMENT, "a variant choice with an empty fallback");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution=../2x"), ODR_E_INVALID_ARGUMENT, "a variant value with path characters");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution=2x,texture=astc"), ODR_E_INVALID_ARGUMENT, "two axes in one variant choice");
    TRUE_THAT(strstr(odr_error_message(), "one axis per call") != NULL, "the message says one axis per call");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, ""), ODR_E_INVALID_ARGUMENT, "an empty variant choice");
    EXPECT(odr_config_set_int(config, ODR_OPT_VARIANT, 2), ODR_E_INVALID_ARGUMENT, "a variant choice set as a number");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution=2x,1x"), ODR_OK, "a variant choice with a fallback");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "texture=astc"), ODR_OK, "a choice on a second axis");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, NULL), ODR_OK, "NULL removes every variant choice");

    odr_manager *manager = NULL;
    EXPECT(odr_manager_create(config, &manager), ODR_E_INVALID_ARGUMENT, "a manager without catalog or store");
    TRUE_THAT(strstr(odr_error_message(), "ODR_OPT_CATALOG_URL") != NULL, "the message names the missing option");
    EXPECT(odr_manager_create(NULL, &manager), ODR_E_INVALID_ARGUMENT, "a manager from a NULL config");
    TRUE_THAT(manager == NULL, "a failed create leaves the out-pointer alone");
    odr_config_free(config);
    odr_config_free(NULL);
}

/* Mirrors: with the primary refusing connections, the catalog comes from the mirror only when an
 * unsigned catalog may come from a mirror; then a tag installs from it. */
static void mirror_checks(const char *catalog_url, const char *store) {
    odr_config *config = NULL;
    char path[4096];
    EXPECT(odr_config_create(&config), ODR_OK, "a config for mirrors");
    EXPECT(odr_config_set_string(config, ODR_OPT_MIRROR, ""), ODR_E_INVALID_ARGUMENT, "an empty mirror");
    EXPECT(odr_config_set_string(config, ODR_OPT_MIRROR, "ftp://mirror.example.com/game/"), ODR_E_INVALID_ARGUMENT, "an ftp mirror");
    TRUE_THAT(strstr(odr_error_message(), "http") != NULL, "the message says a mirror is an http(s) URL");
    EXPECT(odr_config_set_string(config, ODR_OPT_MIRROR, "file:///srv/catalog/"), ODR_E_INVALID_ARGUMENT, "a file: mirror");
    EXPECT(odr_config_set_int(config, ODR_OPT_MIRROR, 1), ODR_E_INVALID_ARGUMENT, "a mirror set as a number");
    EXPECT(odr_config_set_int(config, ODR_OPT_ALLOW_UNSIGNED_MIRRORS, 2), ODR_E_INVALID_ARGUMENT, "ODR_OPT_ALLOW_UNSIGNED_MIRRORS of 2");
    EXPECT(odr_config_set_string(config, ODR_OPT_ALLOW_UNSIGNED_MIRRORS, "1"), ODR_E_INVALID_ARGUMENT, "ODR_OPT_ALLOW_UNSIGNED_MIRRORS set as a string");
    EXPECT(odr_config_set_string(config, ODR_OPT_MIRROR, "http://mirror.example.com/game/"), ODR_OK, "a mirror");
    EXPECT(odr_config_set_string(config, ODR_OPT_MIRROR, NULL), ODR_OK, "NULL removes every mirror");
    EXPECT(odr_config_set_string(config, ODR_OPT_PEER, ""), ODR_E_INVALID_ARGUMENT, "an empty peer");
    EXPECT(odr_config_set_string(config, ODR_OPT_PEER, "file:///srv/store/"), ODR_E_INVALID_ARGUMENT, "a file: peer");
    EXPECT(odr_config_set_int(config, ODR_OPT_PEER, 1), ODR_E_INVALID_ARGUMENT, "a peer set as a number");
    EXPECT(odr_config_set_string(config, ODR_OPT_PEER, "http://192.168.1.20:7420/"), ODR_OK, "a peer");
    EXPECT(odr_config_set_string(config, ODR_OPT_PEER, NULL), ODR_OK, "NULL removes every peer");
    odr_config_free(config);

    snprintf(path, sizeof path, "%s-mirror", store);
    /* Port 1 on loopback refuses connections at once: a primary that is down. */
    config = checks_config("http://127.0.0.1:1/game/", path);
    EXPECT(odr_config_set_string(config, ODR_OPT_MIRROR, catalog_url), ODR_OK, "the test server as the mirror");
    odr_manager *manager = NULL;
    EXPECT(odr_manager_create(config, &manager), ODR_OK, "a manager with a mirror");
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_E_CATALOG_UNAVAILABLE, "an unsigned catalog from a mirror is refused by default");
    TRUE_THAT(strstr(odr_error_message(), "mirror") != NULL, "the message names the mirror");
    odr_manager_destroy(manager);
    manager = NULL;
    EXPECT(odr_config_set_int(config, ODR_OPT_ALLOW_UNSIGNED_MIRRORS, 1), ODR_OK, "allow unsigned catalogs from mirrors");
    EXPECT(odr_manager_create(config, &manager), ODR_OK, "a manager that allows them");
    odr_config_free(config);
    if (!manager) return;
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "the catalog comes from the mirror");
    odr_request *request = request_for(manager, "level1");
    EXPECT(odr_request_begin_wait(request, 60000), ODR_OK, "a tag installs from the mirror");
    char file[4096];
    size_t needed = 0;
    EXPECT(odr_request_resource_path(request, "Levels/Level1/map.json", file, sizeof file, &needed), ODR_OK, "its file has a path");
    FILE *opened = fopen(file, "rb");
    TRUE_THAT(opened != NULL, "the file installed from the mirror is readable");
    if (opened) fclose(opened);
    odr_request_end(request);
    odr_request_destroy(request);
    odr_manager_destroy(manager);
}

/* A manager that trusts a key refuses the test's catalog, which nobody signed. */
static void trust_checks(const char *catalog_url, const char *store) {
    /* The public key of docs/FORMAT.md's test vector: a valid key that did not sign this catalog. */
    const char *vector_key = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8";
    char trust_store[4096];
    snprintf(trust_store, sizeof trust_store, "%s-trusting", store);
    odr_config *config = NULL;
    EXPECT(odr_config_create(&config), ODR_OK, "config_create for trust");
    EXPECT(odr_config_set_string(config, ODR_OPT_TRUSTED_KEY, "03a1"), ODR_E_INVALID_ARGUMENT, "a trusted key of 4 hex digits");
    EXPECT(odr_config_set_string(config, ODR_OPT_TRUSTED_KEY, "/no/such/key.pub"), ODR_E_INVALID_ARGUMENT, "a trusted key file that does not exist");
    EXPECT(odr_config_set_string(config, ODR_OPT_TRUSTED_KEY, ""), ODR_E_INVALID_ARGUMENT, "an empty trusted key");
    EXPECT(odr_config_set_int(config, ODR_OPT_SIGNATURE_THRESHOLD, 0), ODR_E_INVALID_ARGUMENT, "a signature threshold of 0");
    EXPECT(odr_config_set_string(config, ODR_OPT_TRUSTED_KEY, vector_key), ODR_OK, "a trusted key as hex");
    EXPECT(odr_config_set_string(config, ODR_OPT_CATALOG_URL, catalog_url), ODR_OK, "catalog URL for trust");
    EXPECT(odr_config_set_string(config, ODR_OPT_STORE_DIRECTORY, trust_store), ODR_OK, "store for trust");
    EXPECT(odr_config_set_int(config, ODR_OPT_SIGNATURE_THRESHOLD, 2), ODR_OK, "a threshold of 2");
    odr_manager *manager = NULL;
    EXPECT(odr_manager_create(config, &manager), ODR_E_INVALID_ARGUMENT, "a threshold above the number of trusted keys");
    EXPECT(odr_config_set_int(config, ODR_OPT_SIGNATURE_THRESHOLD, 1), ODR_OK, "a threshold of 1");
    EXPECT(odr_manager_create(config, &manager), ODR_OK, "a manager that trusts a key");
    odr_config_free(config);
    if (!manager) return;
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_E_UNTRUSTED_CATALOG, "an unsigned catalog with a trusted key");
    TRUE_THAT(strstr(odr_status_name(odr_error_status()), "untrusted-catalog") != NULL, "the status name is the Swift code's");
    int64_t version = 0;
    EXPECT(odr_manager_current_version(manager, &version), ODR_E_CATALOG_UNAVAILABLE, "nothing was accepted");
    EXPECT(odr_config_set_string(NULL, ODR_OPT_TRUSTED_KEY, NULL), ODR_E_INVALID_ARGUMENT, "clearing keys of a NULL config");
    odr_manager_destroy(manager);
}

static void null_handle_checks(void) {
    int64_t number = 0;
    double priority = 0;
    int began = 0;
    odr_event event = ODR_EVENT_INIT;
    const char *const tags[] = { "level1" };
    char buffer[8];
    EXPECT(odr_manager_prepare(NULL, 1, 1000), ODR_E_INVALID_ARGUMENT, "prepare(NULL)");
    EXPECT(odr_manager_prepare_async(NULL, 1, NULL, NULL), ODR_E_INVALID_ARGUMENT, "prepare_async(NULL)");
    EXPECT(odr_manager_current_version(NULL, &number), ODR_E_INVALID_ARGUMENT, "current_version(NULL)");
    EXPECT(odr_manager_download_size(NULL, tags, 1, &number), ODR_E_INVALID_ARGUMENT, "download_size(NULL)");
    EXPECT(odr_manager_preservation_priority(NULL, "level1", &priority), ODR_E_INVALID_ARGUMENT, "preservation_priority(NULL)");
    EXPECT(odr_manager_purge(NULL, 1, NULL, NULL, NULL), ODR_E_INVALID_ARGUMENT, "purge(NULL)");
    EXPECT(odr_manager_poll_event(NULL, &event), ODR_E_INVALID_ARGUMENT, "poll_event(NULL)");
    EXPECT(odr_request_create(NULL, tags, 1, NULL), ODR_E_INVALID_ARGUMENT, "request_create(NULL)");
    EXPECT(odr_request_begin(NULL, NULL, NULL), ODR_E_INVALID_ARGUMENT, "begin(NULL)");
    EXPECT(odr_request_begin_wait(NULL, 10), ODR_E_INVALID_ARGUMENT, "begin_wait(NULL)");
    EXPECT(odr_request_conditionally_begin(NULL, &began), ODR_E_INVALID_ARGUMENT, "conditionally_begin(NULL)");
    EXPECT(odr_request_end(NULL), ODR_E_INVALID_ARGUMENT, "end(NULL)");
    EXPECT(odr_request_cancel(NULL), ODR_E_INVALID_ARGUMENT, "cancel(NULL)");
    EXPECT(odr_request_pause(NULL), ODR_E_INVALID_ARGUMENT, "pause(NULL)");
    EXPECT(odr_request_resume(NULL), ODR_E_INVALID_ARGUMENT, "resume(NULL)");
    EXPECT(odr_request_set_loading_priority(NULL, 0.5), ODR_E_INVALID_ARGUMENT, "set_loading_priority(NULL)");
    EXPECT(odr_request_progress(NULL, &number, &number), ODR_E_INVALID_ARGUMENT, "progress(NULL)");
    EXPECT(odr_request_resource_path(NULL, "a", buffer, sizeof buffer, NULL), ODR_E_INVALID_ARGUMENT, "resource_path(NULL)");
    odr_request_destroy(NULL);
    odr_manager_destroy(NULL);
    TRUE_THAT(1, "destroy(NULL) is ignored");
}

static void tag_list_checks(odr_manager *manager) {
    odr_request *request = NULL;
    int64_t bytes = -1;
    const char *const good[] = { "level1" };
    const char *const with_null[] = { "level1", NULL };
    const char *const with_empty[] = { "" };
    const char *const not_utf8[] = { "level\xc3" };
    const char *const unknown[] = { "level99" };
    EXPECT(odr_request_create(manager, NULL, 1, &request), ODR_E_INVALID_ARGUMENT, "a NULL tag list");
    EXPECT(odr_request_create(manager, good, 0, &request), ODR_E_INVALID_ARGUMENT, "an empty tag list");
    EXPECT(odr_request_create(manager, with_null, 2, &request), ODR_E_INVALID_ARGUMENT, "a NULL tag in the list");
    EXPECT(odr_request_create(manager, with_empty, 1, &request), ODR_E_INVALID_ARGUMENT, "an empty tag");
    EXPECT(odr_request_create(manager, not_utf8, 1, &request), ODR_E_INVALID_ARGUMENT, "a tag that is not UTF-8");
    EXPECT(odr_request_create(manager, good, 1, NULL), ODR_E_INVALID_ARGUMENT, "a NULL out_request");
    TRUE_THAT(request == NULL, "failed creates leave the out-pointer alone");
    EXPECT(odr_manager_download_size(manager, unknown, 1, &bytes), ODR_E_INVALID_TAG, "download_size of an unknown tag");
    EXPECT(odr_manager_download_size(manager, good, 0, &bytes), ODR_E_INVALID_ARGUMENT, "download_size of no tags");
    EXPECT(odr_manager_download_size(manager, good, 1, NULL), ODR_E_INVALID_ARGUMENT, "download_size into NULL");
    EXPECT(odr_manager_set_preservation_priority(manager, good, 1, 2.0), ODR_E_INVALID_ARGUMENT, "a preservation priority of 2");
    EXPECT(odr_manager_set_preservation_priority(manager, unknown, 1, 0.5), ODR_E_INVALID_TAG, "the preservation priority of an unknown tag");
    double priority = -1;
    EXPECT(odr_manager_preservation_priority(manager, "level99", &priority), ODR_E_INVALID_TAG, "reading an unknown tag's priority");
    EXPECT(odr_manager_set_preservation_priority(manager, good, 1, 0.75), ODR_OK, "setting level1's preservation priority");
    EXPECT(odr_manager_preservation_priority(manager, "level1", &priority), ODR_OK, "reading level1's priority");
    TRUE_THAT(priority == 0.75, "the priority read is the one set");

    /* An unknown tag: the request is created, and beginning it says which tag. */
    EXPECT(odr_request_create(manager, unknown, 1, &request), ODR_OK, "a request for an unknown tag is created");
    int began = -1;
    EXPECT(odr_request_conditionally_begin(request, &began), ODR_OK, "conditionally beginning an unknown tag");
    TRUE_THAT(began == 0, "an unknown tag does not begin");
    EXPECT(odr_request_begin_wait(request, 60000), ODR_E_INVALID_TAG, "beginning an unknown tag");
    TRUE_THAT(strstr(odr_error_message(), "level99") != NULL, "the message names the unknown tag");
    TRUE_THAT(state_of(request) == ODR_REQUEST_INITIAL, "a failed begin leaves the request initial");
    odr_request_destroy(request);
}

static void request_checks(odr_manager *manager) {
    odr_request *level1 = request_for(manager, "level1");
    char small[4], path[4096];
    size_t needed = 0;
    EXPECT(odr_request_resource_path(level1, "Levels/Level1/map.json", path, sizeof path, &needed), ODR_E_RESOURCE_NOT_INSTALLED, "a path before begin");
    EXPECT(odr_request_end(level1), ODR_E_END_BEFORE_BEGIN, "end before begin");
    EXPECT(odr_request_set_loading_priority(level1, 2.0), ODR_E_INVALID_ARGUMENT, "a loading priority of 2");
    EXPECT(odr_request_set_loading_priority(level1, NAN), ODR_E_INVALID_ARGUMENT, "a loading priority of NaN");
    EXPECT(odr_request_set_loading_priority(level1, ODR_PRIORITY_URGENT), ODR_OK, "an urgent loading priority");
    double priority = 0;
    EXPECT(odr_request_loading_priority(level1, &priority), ODR_OK, "reading the loading priority");
    TRUE_THAT(priority == ODR_PRIORITY_URGENT, "the loading priority read is urgent");

    EXPECT(odr_request_begin_wait(level1, 60000), ODR_OK, "begin_wait on level1");
    TRUE_THAT(state_of(level1) == ODR_REQUEST_ACCESSING, "level1 is accessing");
    int64_t completed = -1, total = -1;
    EXPECT(odr_request_progress(level1, &completed, &total), ODR_OK, "progress");
    TRUE_THAT(completed == total && total >= 0, "an accessing request's progress is complete");
    EXPECT(odr_request_begin_wait(level1, 1000), ODR_E_BEGIN_TWICE, "begin twice");
    EXPECT(odr_request_begin(level1, NULL, NULL), ODR_E_BEGIN_TWICE, "begin twice, asynchronously");

    EXPECT(odr_request_resource_path(level1, "Levels/Level1/map.json", small, sizeof small, &needed), ODR_E_BUFFER_TOO_SMALL, "a buffer too small");
    size_t asked = 0;
    EXPECT(odr_request_resource_path(level1, "Levels/Level1/map.json", NULL, 0, &asked), ODR_E_BUFFER_TOO_SMALL, "asking for the size needed");
    TRUE_THAT(needed > sizeof small && needed == asked, "the size needed is reported");
    EXPECT(odr_request_resource_path(level1, "Levels/Level1/map.json", path, needed, NULL), ODR_OK, "the path, in a buffer of the size needed");
    TRUE_THAT(strlen(path) + 1 == needed, "the path fills the buffer with its NUL");
    FILE *file = fopen(path, "rb");
    TRUE_THAT(file != NULL, "the path is an installed file");
    if (file) fclose(file);
    EXPECT(odr_request_resource_path(level1, "Levels/Level1/nothing.json", path, sizeof path, NULL), ODR_E_UNKNOWN_RESOURCE, "a resource the catalog does not list");
    EXPECT(odr_request_resource_path(level1, "Levels/Level3/map.json", path, sizeof path, NULL), ODR_E_UNKNOWN_RESOURCE, "a resource of a tag the request does not hold");
    EXPECT(odr_request_resource_path(level1, "Levels/\xff.json", path, sizeof path, NULL), ODR_E_INVALID_ARGUMENT, "a resource path that is not UTF-8");
    EXPECT(odr_request_resource_path(level1, NULL, path, sizeof path, NULL), ODR_E_INVALID_ARGUMENT, "a NULL resource path");

    EXPECT(odr_request_end(level1), ODR_OK, "end");
    TRUE_THAT(state_of(level1) == ODR_REQUEST_ENDED, "level1 ended");
    EXPECT(odr_request_end(level1), ODR_E_END_BEFORE_BEGIN, "end after end");
    EXPECT(odr_request_begin_wait(level1, 1000), ODR_E_BEGIN_AFTER_END, "begin after end");
    EXPECT(odr_request_begin(level1, NULL, NULL), ODR_E_BEGIN_AFTER_END, "begin after end, asynchronously");
    int began = -1;
    EXPECT(odr_request_conditionally_begin(level1, &began), ODR_OK, "conditionally begin after end");
    TRUE_THAT(began == 0, "an ended request does not begin again");
    EXPECT(odr_request_resource_path(level1, "Levels/Level1/map.json", path, sizeof path, NULL), ODR_E_RESOURCE_NOT_INSTALLED, "a path after end");
    odr_request_destroy(level1);

    /* A conditional begin on installed tags, then again on the same request. */
    odr_request *again = request_for(manager, "level1");
    EXPECT(odr_request_conditionally_begin(again, &began), ODR_OK, "conditionally begin installed level1");
    TRUE_THAT(began == 1 && state_of(again) == ODR_REQUEST_ACCESSING, "installed level1 begins without downloading");
    EXPECT(odr_request_conditionally_begin(again, &began), ODR_OK, "conditionally begin an accessing request");
    TRUE_THAT(began == 0, "an accessing request does not begin twice");
    odr_request_destroy(again);
}

static void waiting_checks(odr_manager *manager) {
    /* A timeout that passes first: the begin is cancelled and nothing is held. */
    odr_request *level5 = request_for(manager, "level5");
    EXPECT(odr_request_begin_wait(level5, 0), ODR_E_WAIT_TIMEOUT, "a begin whose timeout passes first");
    TRUE_THAT(state_of(level5) == ODR_REQUEST_INITIAL, "after the timeout the request is initial again");

    /* Cancelling a begin in progress. */
    odr_request *level3 = request_for(manager, "level3");
    outcome cancelled = { 0, -1 };
    EXPECT(odr_request_begin(level3, done, &cancelled), ODR_OK, "begin level3");
    TRUE_THAT(wait_for_state(level3, ODR_REQUEST_REQUESTED) || atomic_load(&cancelled.finished), "level3 is requested");
    /* Paused and resumed first: the resume must win, or the begin after the cancel never ends. */
    EXPECT(odr_request_pause(level3), ODR_OK, "pause level3");
    EXPECT(odr_request_resume(level3), ODR_OK, "resume level3");
    EXPECT(odr_request_cancel(level3), ODR_OK, "cancel level3");
    TRUE_THAT(wait_for(&cancelled), "the cancelled begin completes");
    check(atomic_load(&cancelled.status) == ODR_E_CANCELLED, "a cancelled begin completes with ODR_E_CANCELLED", (odr_status)atomic_load(&cancelled.status), ODR_E_CANCELLED);
    TRUE_THAT(wait_for_state(level3, ODR_REQUEST_INITIAL), "a cancelled request is initial again");

    /* The same request begins again, with progress polled each frame until it is accessing. */
    outcome loaded = { 0, -1 };
    EXPECT(odr_request_begin(level3, done, &loaded), ODR_OK, "begin level3 again");
    int64_t completed = 0, total = 0, last = -1;
    int monotonic = 1;
    for (int i = 0; i < 12000 && !atomic_load(&loaded.finished); i++) {
        odr_request_progress(level3, &completed, &total);
        if (completed < last || completed > total) monotonic = 0;
        last = completed;
        frame();
    }
    TRUE_THAT(atomic_load(&loaded.finished), "level3 begun again completes");
    check(atomic_load(&loaded.status) == ODR_OK, "level3 loads after a cancel", (odr_status)atomic_load(&loaded.status), ODR_OK);
    TRUE_THAT(monotonic, "progress only grows and never passes the total");
    odr_request_progress(level3, &completed, &total);
    TRUE_THAT(total > 0 && completed == total, "a downloaded request's progress is complete");

    /* Pausing and resuming a begin in progress: it completes once resumed. */
    odr_request *level2 = request_for(manager, "level2");
    outcome resumed = { 0, -1 };
    int began_level2 = 0;
    odr_request_conditionally_begin(level2, &began_level2);
    if (!began_level2) {
        EXPECT(odr_request_begin(level2, done, &resumed), ODR_OK, "begin level2");
        EXPECT(odr_request_pause(level2), ODR_OK, "pause level2");
        EXPECT(odr_request_resume(level2), ODR_OK, "resume level2");
        TRUE_THAT(wait_for(&resumed), "a paused and resumed begin completes");
        check(atomic_load(&resumed.status) == ODR_OK, "a resumed begin succeeds", (odr_status)atomic_load(&resumed.status), ODR_OK);
    } else {
        /* The prefetch installed level2 already: pausing a request that downloads nothing is harmless. */
        EXPECT(odr_request_pause(level2), ODR_OK, "pause level2");
        EXPECT(odr_request_resume(level2), ODR_OK, "resume level2");
        TRUE_THAT(1, "a paused and resumed begin completes");
        TRUE_THAT(1, "a resumed begin succeeds");
    }
    odr_request_destroy(level2);

    /* Destroying a request whose begin is running completes it with ODR_E_CANCELLED. */
    outcome destroyed = { 0, -1 };
    odr_request *level4 = request_for(manager, "level4");
    EXPECT(odr_request_begin(level4, done, &destroyed), ODR_OK, "begin level4");
    odr_request_destroy(level4);
    TRUE_THAT(wait_for(&destroyed), "the destroyed request's begin completes");
    check(atomic_load(&destroyed.status) == ODR_E_CANCELLED, "a destroyed request's begin completes with ODR_E_CANCELLED", (odr_status)atomic_load(&destroyed.status), ODR_E_CANCELLED);

    EXPECT(odr_request_end(level3), ODR_OK, "end level3");
    odr_request_destroy(level3);
    odr_request_destroy(level5);
}

static void event_and_purge_checks(odr_manager *manager) {
    odr_event event = ODR_EVENT_INIT;
    int installed = 0, updated = 0, good_ids = 1, tags_available = 0;
    for (;;) {
        EXPECT(odr_manager_poll_event(manager, &event), ODR_OK, "poll an event");
        if (event.kind == ODR_EVENT_NONE) break;
        if (event.kind == ODR_EVENT_TAG_AVAILABLE && strlen(event.tag) > 0) tags_available++;
        if (event.kind == ODR_EVENT_PACK_INSTALLED) {
            installed++;
            if (strlen(event.pack_id) != 64 || event.bytes <= 0) good_ids = 0;
        }
        if (event.kind == ODR_EVENT_CATALOG_UPDATED && event.catalog_version == 1) updated++;
    }
    TRUE_THAT(installed > 0, "installs are events");
    TRUE_THAT(good_ids, "installed events carry a pack id and bytes");
    TRUE_THAT(updated == 1, "the first catalog is a catalog-updated event");
    TRUE_THAT(tags_available > 0, "a tag whose packs are all installed is a tag-available event, with its name");
    /* A caller built with version 1 of odr_event: nothing is written past purge_reason. */
    unsigned char buffer[sizeof(odr_event)];
    memset(buffer, 0xAB, sizeof buffer);
    odr_event *first_version = (odr_event *)buffer;
    first_version->version = 1;
    EXPECT(odr_manager_poll_event(manager, first_version), ODR_OK, "poll into a version-1 event");
    int untouched = 1;
    for (size_t i = offsetof(odr_event, tag); i < sizeof buffer; i++) if (buffer[i] != 0xAB) untouched = 0;
    TRUE_THAT(untouched, "a version-1 event is not written past purge_reason");
    odr_event old = ODR_EVENT_INIT;
    old.version = 0;
    EXPECT(odr_manager_poll_event(manager, &old), ODR_E_INVALID_ARGUMENT, "an event without a version");
    EXPECT(odr_manager_poll_event(manager, NULL), ODR_E_INVALID_ARGUMENT, "polling into NULL");

    int64_t freed = -1, shortfall = -1, count = -1;
    EXPECT(odr_manager_purge_plan(manager, -1, &freed, &shortfall, &count), ODR_E_INVALID_ARGUMENT, "a purge of negative bytes");
    EXPECT(odr_manager_purge_plan(manager, INT64_MAX, &freed, &shortfall, &count), ODR_OK, "a purge plan of INT64_MAX bytes");
    EXPECT(odr_manager_purge_plan(manager, INT64_C(1) << 40, &freed, &shortfall, &count), ODR_OK, "a purge plan");
    int64_t planned = count;
    TRUE_THAT(planned > 0 && freed > 0 && shortfall > 0, "the plan frees what is not in use, and falls short of a terabyte");
    EXPECT(odr_manager_purge(manager, INT64_C(1) << 40, &freed, &shortfall, &count), ODR_OK, "a purge");
    /* A prefetch may install a pack between the plan and the purge: the purge may delete more. */
    TRUE_THAT(count >= planned && freed > 0, "the purge deletes at least what the plan said");
    int purged = 0, reasons = 1;
    for (;;) {
        odr_event next = ODR_EVENT_INIT;
        odr_manager_poll_event(manager, &next);
        if (next.kind == ODR_EVENT_NONE) break;
        if (next.kind == ODR_EVENT_PACK_PURGED) {
            purged++;
            if (next.purge_reason[0] == '\0' || strlen(next.pack_id) != 64) reasons = 0;
        }
    }
    TRUE_THAT(purged == count, "every purged pack is an event");
    TRUE_THAT(reasons, "purge events carry the pack and the reason");
    int64_t bytes = 0;
    const char *const tags[] = { "level3" };
    EXPECT(odr_manager_download_size(manager, tags, 1, &bytes), ODR_OK, "download size after the purge");
    TRUE_THAT(bytes > 0, "a purged tag must be downloaded again");
}

/* Anticipation hints: bad arguments, then a hint that installs the purged level3. */
static void hint_checks(odr_manager *manager) {
    const char *const tags[] = { "level3" };
    const char *const unknown[] = { "no-such-tag" };
    const char *const null_tag[] = { NULL };
    odr_hint *hint = NULL;
    EXPECT(odr_anticipate(NULL, tags, 1, 0.5, &hint), ODR_E_INVALID_ARGUMENT, "a hint without a manager");
    EXPECT(odr_anticipate(manager, tags, 0, 0.5, &hint), ODR_E_INVALID_ARGUMENT, "a hint of no tags");
    EXPECT(odr_anticipate(manager, NULL, 1, 0.5, &hint), ODR_E_INVALID_ARGUMENT, "a hint with a NULL tag list");
    EXPECT(odr_anticipate(manager, null_tag, 1, 0.5, &hint), ODR_E_INVALID_ARGUMENT, "a hint with a NULL tag");
    EXPECT(odr_anticipate(manager, tags, 1, 0.5, NULL), ODR_E_INVALID_ARGUMENT, "a hint without out_hint");
    EXPECT(odr_anticipate(manager, tags, 1, 1.5, &hint), ODR_E_INVALID_ARGUMENT, "a likelihood above 1");
    EXPECT(odr_anticipate(manager, tags, 1, -0.5, &hint), ODR_E_INVALID_ARGUMENT, "a negative likelihood");
    EXPECT(odr_anticipate(manager, tags, 1, NAN, &hint), ODR_E_INVALID_ARGUMENT, "a NaN likelihood");
    EXPECT(odr_anticipate(manager, unknown, 1, 0.5, &hint), ODR_E_INVALID_TAG, "a hint of an unknown tag");
    TRUE_THAT(hint == NULL, "a rejected hint returns no handle");
    odr_hint_end(NULL); /* ignored */

    double measure = -1;
    int64_t judged = -1;
    EXPECT(odr_manager_prefetch_measure(NULL, &measure, &judged), ODR_E_INVALID_ARGUMENT, "a prefetch measure without a manager");
    EXPECT(odr_manager_prefetch_measure(manager, NULL, &judged), ODR_E_INVALID_ARGUMENT, "a prefetch measure without out_measure");
    EXPECT(odr_manager_prefetch_measure(manager, &measure, NULL), ODR_OK, "a prefetch measure without the judged bytes");
    EXPECT(odr_manager_prefetch_measure(manager, &measure, &judged), ODR_OK, "the prefetch measure");
    TRUE_THAT(measure == 1 && judged == 0, "before any hinted pack is judged the measure trusts the game (1, 0 bytes)");

    int64_t bytes = -1;
    EXPECT(odr_anticipate(manager, tags, 1, 0.9, &hint), ODR_OK, "a hint of level3");
    TRUE_THAT(hint != NULL, "a hint returns a handle");
    /* Installed is the tag-available event, not a download size of 0: the size is 0 as soon as
     * every entry is verified in staging, while the packs still have to move into packs/ (this
     * check once read 0 there, ended the hint, and then saw the install finish after it). */
    int available = 0;
    for (int i = 0; i < 12000 && !available; i++) {
        odr_event event = ODR_EVENT_INIT;
        while (!available && odr_manager_poll_event(manager, &event) == ODR_OK && event.kind != ODR_EVENT_NONE) {
            if (event.kind == ODR_EVENT_TAG_AVAILABLE && strcmp(event.tag, "level3") == 0) available = 1;
        }
        if (!available) frame();
    }
    TRUE_THAT(available, "the hint installed level3 (a tag-available event)");
    EXPECT(odr_manager_download_size(manager, tags, 1, &bytes), ODR_OK, "download size of the hinted tag");
    TRUE_THAT(bytes == 0, "the hint prefetched level3 (nothing left to download)");
    odr_hint_end(hint);
    EXPECT(odr_manager_download_size(manager, tags, 1, &bytes), ODR_OK, "download size after the hint ended");
    TRUE_THAT(bytes == 0, "ending a hint leaves what it installed");
    /* Installed, not merely nothing left to move: a conditional begin holds level3 without a download. */
    odr_request *level3 = request_for(manager, "level3");
    int began = 0;
    EXPECT(odr_request_conditionally_begin(level3, &began), ODR_OK, "conditionally begin level3 after the hint ended");
    TRUE_THAT(began == 1, "level3 begins at once after its hint ended");
    odr_request_destroy(level3);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CATALOG-URL STORE-DIRECTORY\n", argv[0]);
        return 2;
    }
    library_checks();
    config_checks();
    null_handle_checks();
    trust_checks(argv[1], argv[2]);
    mirror_checks(argv[1], argv[2]);

    odr_manager *manager = checks_manager(argv[1], argv[2]);
    if (!manager) return 1;
    int64_t version = 0;
    EXPECT(odr_manager_current_version(manager, &version), ODR_E_CATALOG_UNAVAILABLE, "the version before prepare");
    outcome prepared = { 0, -1 };
    EXPECT(odr_manager_prepare_async(manager, 1, done, &prepared), ODR_OK, "prepare asynchronously");
    TRUE_THAT(wait_for(&prepared) && atomic_load(&prepared.status) == ODR_OK, "the preparation completes");
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare, blocking");
    EXPECT(odr_manager_current_version(manager, &version), ODR_OK, "the version after prepare");
    TRUE_THAT(version == 1, "the version is 1");

    tag_list_checks(manager);
    request_checks(manager);
    waiting_checks(manager);
    event_and_purge_checks(manager);
    hint_checks(manager);
    odr_manager_destroy(manager);

    printf("checks: %d failed: %d\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
