/*
 * What an engine checks before shipping libodr, from C, built with AddressSanitizer: callbacks never
 * run after the call that stops them returns (the context is freed right after), begin is
 * synchronous, messages name C functions, tags and files can be listed, the network probe is the
 * caller's, and odr_shutdown leaves no library thread behind.
 *
 *   lifetime_checks CATALOG-URL STORE-DIRECTORY
 *
 * Run by LifetimeTests against the sample game on a slowed loopback server (under strace when it is
 * installed). Prints one line per check ("ok <name>" or "FAIL <name>: ..."), "tag ..." and "file ..."
 * lines for the lists, "threads ..." figures, then "checks: <n> failed: <m>"; exits 1 if any failed.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <odr.h>

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks.h"

static void sleep_ms(long milliseconds) {
    struct timespec wait = { milliseconds / 1000, (milliseconds % 1000) * 1000000L };
    nanosleep(&wait, NULL);
}

/* The threads of this process, and how many of them are named `prefix`... */
static int threads(const char *prefix, int *named) {
    int count = 0;
    if (named) *named = 0;
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return -1;
    struct dirent *entry;
    while ((entry = readdir(tasks))) {
        if (entry->d_name[0] == '.') continue;
        count++;
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
        FILE *comm = fopen(path, "r");
        if (comm) {
            if (!fgets(name, sizeof name, comm)) name[0] = '\0';
            fclose(comm);
        }
        if (named && prefix && strncmp(name, prefix, strlen(prefix)) == 0) (*named)++;
    }
    closedir(tasks);
    return count;
}

/* What an engine hands a callback: heap memory it frees as soon as the call that stops it returns. */
typedef struct context {
    atomic_int calls;
    atomic_int status;
    odr_request *request;       /* the callback destroys it, when set */
    struct context *other_context;
    odr_request *other;         /* the callback destroys it too, when set */
    atomic_int other_done;      /* the other request's callback had returned when its destroy did */
    char frame[64];             /* written by every callback, so a late one is a use after free */
} context;

static void record(odr_status status, const char *message, void *user_data) {
    context *c = user_data;
    (void)message;
    memset(c->frame, 0x5a, sizeof c->frame);
    atomic_store(&c->status, (int)status);
    atomic_fetch_add(&c->calls, 1);
}

/* Destroys its own request, and then another one whose begin still runs. */
static void destroy_from_inside(odr_status status, const char *message, void *user_data) {
    context *c = user_data;
    odr_request_destroy(c->request);
    if (c->other) {
        odr_request_destroy(c->other);
        atomic_store(&c->other_done, atomic_load(&c->other_context->calls) == 1);
    }
    record(status, message, user_data);
}

static context *new_context(void) { return calloc(1, sizeof(context)); }

static int wait_calls(context *c) {
    for (int i = 0; i < 12000 && atomic_load(&c->calls) == 0; i++) sleep_ms(5);
    return atomic_load(&c->calls);
}

static odr_request_state state_of(odr_request *request) {
    odr_request_state state = (odr_request_state)-1;
    odr_request_state_get(request, &state);
    return state;
}

static odr_request *request_for(odr_manager *manager, const char *tag) {
    const char *const tags[] = { tag };
    odr_request *request = NULL;
    odr_request_create(manager, tags, 1, &request);
    return request;
}

static odr_manager *manager_at(const char *url, const char *store, const char *suffix, odr_config **keep) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", store, suffix);
    odr_config *config = checks_config(url, path);
    odr_manager *manager = NULL;
    if (keep) {
        *keep = config;
        return NULL;
    }
    odr_manager_create(config, &manager);
    odr_config_free(config);
    return manager;
}

static void lifetime_checks(odr_manager *manager) {
    /* Destroyed right after begin, the context freed at once: 12 times, at different moments. */
    const char *tags[] = { "level3", "level4", "level5" };
    int once = 1;
    for (int i = 0; i < 12; i++) {
        odr_request *request = request_for(manager, tags[i % 3]);
        context *c = new_context();
        if (odr_request_begin(request, record, c) != ODR_OK) once = 0;
        if (i % 4 == 1) sleep_ms(2);
        if (i % 4 == 2) sleep_ms(30);
        odr_request_destroy(request);
        if (atomic_load(&c->calls) != 1) once = 0;
        free(c);
    }
    TRUE_THAT(once, "after odr_request_destroy every callback has run once; its context is freed at once");

    /* End, then free. */
    odr_request *request = request_for(manager, "level5");
    context *c = new_context();
    EXPECT(odr_request_begin(request, record, c), ODR_OK, "begin level5 to end it");
    EXPECT(odr_request_end(request), ODR_OK, "end level5 while it downloads");
    /* Cancelled, unless the begin found level5 installed and finished first. */
    TRUE_THAT(atomic_load(&c->calls) == 1 && (atomic_load(&c->status) == ODR_E_CANCELLED || atomic_load(&c->status) == ODR_OK),
              "after odr_request_end the callback has run");
    free(c);
    odr_request_destroy(request);

    /* Cancel, then free: the request is initial again when cancel returns. */
    request = request_for(manager, "level5");
    c = new_context();
    EXPECT(odr_request_begin(request, record, c), ODR_OK, "begin level5 to cancel it");
    EXPECT(odr_request_cancel(request), ODR_OK, "cancel level5");
    TRUE_THAT(atomic_load(&c->calls) == 1, "after odr_request_cancel the callback has run");
    TRUE_THAT(atomic_load(&c->status) == ODR_E_CANCELLED ? state_of(request) == ODR_REQUEST_INITIAL : state_of(request) == ODR_REQUEST_ACCESSING,
              "after odr_request_cancel the request is initial (or accessing, had it finished first)");
    free(c);
    odr_request_destroy(request);

    /* A callback destroys its own request, and another whose begin is running. */
    odr_request *installed = request_for(manager, "level1");
    EXPECT(odr_request_begin_wait(installed, 60000), ODR_OK, "install level1");
    odr_request_destroy(installed);
    odr_request *slow = request_for(manager, "level5");
    context *slow_context = new_context();
    EXPECT(odr_request_begin(slow, record, slow_context), ODR_OK, "begin level5 for a callback to destroy");
    odr_request *quick = request_for(manager, "level1");
    context *inside = new_context();
    inside->request = quick;
    inside->other = slow;
    inside->other_context = slow_context;
    EXPECT(odr_request_begin(quick, destroy_from_inside, inside), ODR_OK, "begin level1, whose callback destroys it");
    TRUE_THAT(wait_calls(inside) == 1, "a callback destroys its own request without a deadlock");
    TRUE_THAT(atomic_load(&inside->other_done), "a callback destroys another request: that one's callback has run when destroy returns");
    TRUE_THAT(atomic_load(&slow_context->calls) == 1, "the other request's callback ran once");
    free(inside);
    free(slow_context);
}

static void begin_checks(odr_manager *manager) {
    odr_request *request = request_for(manager, "level4");
    context *c = new_context();
    EXPECT(odr_request_begin(request, record, c), ODR_OK, "begin level4");
    odr_request_state state = state_of(request);
    TRUE_THAT(state == ODR_REQUEST_REQUESTED || state == ODR_REQUEST_ACCESSING, "when begin returns the request is requested");
    EXPECT(odr_request_begin(request, record, c), ODR_E_BEGIN_TWICE, "a second begin at once is begin-twice");
    EXPECT(odr_request_begin_wait(request, 1000), ODR_E_BEGIN_TWICE, "a blocking begin at once is begin-twice");
    TRUE_THAT(wait_calls(c) == 1 && atomic_load(&c->status) == ODR_OK, "the first begin completes, once");
    odr_request_destroy(request);
    TRUE_THAT(atomic_load(&c->calls) == 1, "the second begin never calls back");
    free(c);

    /* An unknown tag is the begin's own status, not its callback's. */
    request = request_for(manager, "level99");
    c = new_context();
    EXPECT(odr_request_begin(request, record, c), ODR_E_INVALID_TAG, "begin of an unknown tag returns invalid-tag");
    odr_request_destroy(request);
    TRUE_THAT(atomic_load(&c->calls) == 0, "a begin that failed never calls back");
    free(c);
}

static void message_checks(const char *url, const char *store) {
    odr_manager *manager = manager_at(url, store, "-empty", NULL);
    odr_request *request = request_for(manager, "level1");
    EXPECT(odr_request_end(request), ODR_E_END_BEFORE_BEGIN, "end before begin");
    TRUE_THAT(strstr(odr_error_message(), "odr_request_begin") && !strstr(odr_error_message(), "()"), "the end-before-begin message names odr_request_begin");
    EXPECT(odr_request_begin(request, record, NULL), ODR_E_CATALOG_UNAVAILABLE, "begin before prepare");
    TRUE_THAT(strstr(odr_error_message(), "odr_manager_prepare") && !strstr(odr_error_message(), "()"), "the no-catalog message names odr_manager_prepare");
    printf("message: %s\n", odr_error_message());
    odr_tag_info *tags = NULL;
    size_t count = 0;
    EXPECT(odr_manager_tags(manager, &tags, &count), ODR_E_CATALOG_UNAVAILABLE, "tags before prepare");
    odr_request_destroy(request);
    odr_manager_destroy(manager);
}

static void enumeration_checks(odr_manager *manager) {
    odr_tag_info *tags = NULL;
    size_t count = 0;
    EXPECT(odr_manager_tags(NULL, &tags, &count), ODR_E_INVALID_ARGUMENT, "tags of NULL");
    EXPECT(odr_manager_tags(manager, NULL, &count), ODR_E_INVALID_ARGUMENT, "tags into NULL");
    EXPECT(odr_manager_tags(manager, &tags, &count), ODR_OK, "list the tags");
    for (size_t i = 0; i < count; i++) printf("tag %s %lld %lld\n", tags[i].name, (long long)tags[i].download_bytes, (long long)tags[i].installed_bytes);
    odr_free(tags);

    odr_file_info *files = NULL;
    EXPECT(odr_manager_tag_files(manager, "level99", &files, &count), ODR_E_INVALID_TAG, "files of an unknown tag");
    EXPECT(odr_manager_tag_files(manager, NULL, &files, &count), ODR_E_INVALID_ARGUMENT, "files of a NULL tag");
    EXPECT(odr_manager_tag_files(manager, "level1", &files, &count), ODR_OK, "list level1's files");
    for (size_t i = 0; i < count; i++) printf("file level1 %s %lld\n", files[i].path, (long long)files[i].bytes);
    odr_free(files);
    odr_free(NULL);
}

static atomic_int probe_calls;

static odr_network_condition metered_probe(void *user_data) {
    atomic_fetch_add(&probe_calls, 1);
    return *(odr_network_condition *)user_data;
}

static void probe_checks(const char *url, const char *store) {
    /* The caller's probe says metered; prefetch-level downloads may not use it and do not wait. */
    odr_config *config = NULL;
    manager_at(url, store, "-probe", &config);
    odr_network_condition *answer = malloc(sizeof *answer);
    *answer = ODR_NETWORK_METERED;
    EXPECT(odr_config_set_network_probe(NULL, metered_probe, answer), ODR_E_INVALID_ARGUMENT, "a probe on a NULL config");
    EXPECT(odr_config_set_network_probe(config, metered_probe, answer), ODR_OK, "set a network probe");
    odr_config_set_int(config, ODR_OPT_POLICY_WAITS, 0);
    odr_manager *manager = NULL;
    EXPECT(odr_manager_create(config, &manager), ODR_OK, "a manager with a probe");
    odr_config_free(config);
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare with a probe");
    odr_request *request = request_for(manager, "level2");
    odr_request_set_loading_priority(request, 0.2);
    EXPECT(odr_request_begin_wait(request, 60000), ODR_E_NETWORK_POLICY, "the probe's metered answer applies");
    TRUE_THAT(atomic_load(&probe_calls) > 0, "the caller's probe was asked");
    EXPECT(odr_shutdown(1000), ODR_E_INVALID_ARGUMENT, "odr_shutdown while a manager is alive");
    odr_request_destroy(request);
    odr_manager_destroy(manager);
    int calls = atomic_load(&probe_calls);
    free(answer);
    sleep_ms(200);
    TRUE_THAT(atomic_load(&probe_calls) == calls, "the probe is never called after odr_manager_destroy");

    /* ODR_OPT_NETWORK_METERED gives the answer without a probe. */
    manager_at(url, store, "-metered", &config);
    EXPECT(odr_config_set_int(config, ODR_OPT_NETWORK_METERED, 2), ODR_E_INVALID_ARGUMENT, "ODR_OPT_NETWORK_METERED is -1, 0 or 1");
    EXPECT(odr_config_set_int(config, ODR_OPT_NETWORK_METERED, -1), ODR_OK, "ask NetworkManager again");
    EXPECT(odr_config_set_int(config, ODR_OPT_NETWORK_METERED, 1), ODR_OK, "say the network is metered");
    odr_config_set_int(config, ODR_OPT_POLICY_WAITS, 0);
    odr_manager_create(config, &manager);
    odr_config_free(config);
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare on a metered network");
    request = request_for(manager, "level2");
    odr_request_set_loading_priority(request, 0.2);
    EXPECT(odr_request_begin_wait(request, 60000), ODR_E_NETWORK_POLICY, "ODR_OPT_NETWORK_METERED 1 applies");
    odr_request_destroy(request);
    odr_manager_destroy(manager);
}

static void prepare_checks(const char *url, const char *store) {
    for (int i = 0; i < 3; i++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "-prepare%d", i);
        odr_manager *manager = manager_at(url, store, suffix, NULL);
        context *c = new_context();
        EXPECT(odr_manager_prepare_async(manager, 1, record, c), ODR_OK, "prepare asynchronously");
        if (i == 1) sleep_ms(20);
        if (i == 2) wait_calls(c);
        odr_manager_destroy(manager);
        TRUE_THAT(atomic_load(&c->calls) == 1, "after odr_manager_destroy the prepare callback has run once");
        free(c);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: lifetime_checks CATALOG-URL STORE-DIRECTORY\n");
        return 2;
    }
    int start = threads(NULL, NULL);
    odr_manager *manager = manager_at(argv[1], argv[2], "", NULL);
    TRUE_THAT(manager != NULL, "create the manager");
    if (!manager) return 1;
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare");

    begin_checks(manager);
    lifetime_checks(manager);
    enumeration_checks(manager);
    message_checks(argv[1], argv[2]);
    prepare_checks(argv[1], argv[2]);
    probe_checks(argv[1], argv[2]);
    int busy = threads(NULL, NULL);
    odr_manager_destroy(manager);

    /* Every handle is gone: the library's own threads stop, and libdispatch's idle ones follow. */
    EXPECT(odr_shutdown(60000), ODR_OK, "odr_shutdown");
    int named = 0;
    threads("odr-", &named);
    TRUE_THAT(named == 0, "no odr- thread runs after odr_shutdown");
    int after = threads(NULL, NULL);
    for (int i = 0; i < 600 && after > start + 1; i++) {
        sleep_ms(100);
        after = threads(NULL, NULL);
    }
    printf("threads start %d busy %d after-shutdown %d\n", start, busy, after);
    TRUE_THAT(after <= start + 1, "after odr_shutdown only libdispatch's manager thread stays");

    printf("checks: %d failed: %d\n", checks, failures);
    return failures ? 1 : 0;
}
