/*
 * An engine loop in C over libodr: plays the sample game's five levels.
 *
 *   cc game.c $(pkg-config --cflags --libs odr) -o game
 *   ./game http://127.0.0.1:8080/ /tmp/game-store
 *
 * Per frame it polls the manager's events and the current level's progress, never blocking:
 *  - the next level is prefetched at a low loading priority while the current one plays;
 *  - when the player reaches a level that is not ready, its priority becomes urgent and a loading
 *    screen shows its progress;
 *  - once a level is accessing, the game reads its map (a real file of the level) and plays it;
 *  - the previous level's request is ended when the next one starts.
 *
 * Output lines are stable, so a test can check them (Tests/ODRCAPITests/CGameTests.swift):
 *   level <n>: <state> ...       state changes of each level's request
 *   read <n>: <resource> bytes=<size> fnv1a64=<hex> path=<installed path>
 *   event: <kind> ...            the manager's events
 * Exit status: 0 when every level was played, 1 on an error (printed with odr_error_message()).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <odr.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEVELS 5
#define FRAME_NS 16000000L          /* ~60 frames per second */
#define MAX_FRAMES (60 * 120)       /* give up after two minutes of frames */

/* What a begin's completion tells the frame loop; written on a library thread. */
typedef struct begin_outcome {
    atomic_int finished;
    atomic_int status;
} begin_outcome;

typedef struct level {
    int number;
    odr_request *request;
    begin_outcome outcome;
    odr_request_state last_state;
} level;

static const char *state_name(odr_request_state state) {
    switch (state) {
    case ODR_REQUEST_INITIAL: return "initial";
    case ODR_REQUEST_REQUESTED: return "requested";
    case ODR_REQUEST_ACCESSING: return "accessing";
    case ODR_REQUEST_ENDED: return "ended";
    }
    return "?";
}

static int fail(const char *what, odr_status status) {
    fprintf(stderr, "error: %s: %s (%s)\n", what, odr_status_name(status), odr_error_message());
    return 1;
}

#define CHECK(call, what) do { odr_status s_ = (call); if (s_ != ODR_OK) return fail((what), s_); } while (0)

/* Runs on a library thread: only records the outcome for the frame loop. */
static void begin_done(odr_status status, const char *message, void *user_data) {
    begin_outcome *outcome = user_data;
    (void)message;
    atomic_store(&outcome->status, (int)status);
    atomic_store(&outcome->finished, 1);
}

static void next_frame(void) {
    struct timespec frame = { 0, FRAME_NS };
    nanosleep(&frame, NULL);
}

/* Prints every event that arrived since the last frame. */
static int poll_events(odr_manager *manager) {
    for (;;) {
        odr_event event = ODR_EVENT_INIT;
        CHECK(odr_manager_poll_event(manager, &event), "poll events");
        switch (event.kind) {
        case ODR_EVENT_NONE: return 0;
        case ODR_EVENT_PACK_INSTALLED:
            printf("event: installed %.12s bytes=%" PRId64 "\n", event.pack_id, event.bytes);
            break;
        case ODR_EVENT_PACK_PURGED:
            printf("event: purged %.12s bytes=%" PRId64 " reason=%s\n", event.pack_id, event.bytes, event.purge_reason);
            break;
        case ODR_EVENT_LOW_DISK_SPACE:
            printf("event: low disk space, %" PRId64 " bytes free\n", event.bytes);
            break;
        case ODR_EVENT_CATALOG_UPDATED:
            printf("event: catalog version %" PRId64 "\n", event.catalog_version);
            break;
        case ODR_EVENT_DOWNLOAD_WAITING:
            printf("event: %.12s waits for the download policy (%s)\n", event.pack_id, event.purge_reason);
            break;
        case ODR_EVENT_DOWNLOAD_RESUMED:
            printf("event: %.12s downloads again\n", event.pack_id);
            break;
        case ODR_EVENT_TAG_AVAILABLE:
            printf("event: tag %s is ready\n", event.tag);
            break;
        case ODR_EVENT_TAG_PURGED:
            printf("event: tag %s must download again\n", event.tag);
            break;
        case ODR_EVENT_CATALOG_CHECK_FAILED:
            printf("event: the catalog could not be checked (%s); playing with the stored copy\n", event.purge_reason);
            break;
        case ODR_EVENT_DOWNLOAD_RETRYING:
            printf("event: %.12s lost its connection (%s); retrying in %" PRId64 " ms\n", event.pack_id, event.purge_reason, event.retry_in_ms);
            break;
        }
    }
}

/* Prints a level's state when it changed since the last frame. */
static int report_state(level *level) {
    odr_request_state state;
    CHECK(odr_request_state_get(level->request, &state), "request state");
    if (state != level->last_state) {
        printf("level %d: %s\n", level->number, state_name(state));
        level->last_state = state;
    }
    return 0;
}

/* Creates level n's request and begins it at `priority`, without waiting. */
static int start_level(odr_manager *manager, level *level, int number, double priority) {
    char tag[16];
    snprintf(tag, sizeof tag, "level%d", number);
    const char *const tags[] = { tag };
    memset(level, 0, sizeof *level);
    level->number = number;
    level->last_state = ODR_REQUEST_INITIAL;
    CHECK(odr_request_create(manager, tags, 1, &level->request), "create request");
    CHECK(odr_request_set_loading_priority(level->request, priority), "set loading priority");
    /* Installed already (a previous session, or the prefetch): no download, no callback. */
    int began = 0;
    CHECK(odr_request_conditionally_begin(level->request, &began), "conditionally begin");
    if (began) {
        atomic_store(&level->outcome.status, ODR_OK);
        atomic_store(&level->outcome.finished, 1);
        printf("level %d: installed already\n", number);
    } else {
        CHECK(odr_request_begin(level->request, begin_done, &level->outcome), "begin");
        printf("level %d: began at priority %s\n", number, priority == ODR_PRIORITY_URGENT ? "urgent" : "low");
    }
    return report_state(level);
}

/* The player waits at a loading screen until `level` is accessing. */
static int wait_for_level(odr_manager *manager, level *level) {
    odr_request_state state;
    CHECK(odr_request_state_get(level->request, &state), "request state");
    if (state != ODR_REQUEST_ACCESSING) {
        CHECK(odr_request_set_loading_priority(level->request, ODR_PRIORITY_URGENT), "make urgent");
        printf("level %d: player waiting, priority urgent\n", level->number);
    }
    int64_t shown = -1;
    for (int frame = 0; frame < MAX_FRAMES; frame++) {
        if (poll_events(manager) || report_state(level)) return 1;
        if (atomic_load(&level->outcome.finished)) {
            odr_status status = (odr_status)atomic_load(&level->outcome.status);
            if (status != ODR_OK) {
                fprintf(stderr, "error: level %d did not load: %s\n", level->number, odr_status_name(status));
                return 1;
            }
            return report_state(level);
        }
        int64_t completed = 0, total = 0;
        CHECK(odr_request_progress(level->request, &completed, &total), "progress");
        if (total > 0 && completed != shown) {
            printf("level %d: loading %" PRId64 "/%" PRId64 " bytes\n", level->number, completed, total);
            shown = completed;
        }
        next_frame();
    }
    fprintf(stderr, "error: level %d was not ready after %d frames\n", level->number, MAX_FRAMES);
    return 1;
}

/* Reads the level's map through its installed path, as an engine loads an asset. */
static int read_map(level *level) {
    char resource[64];
    snprintf(resource, sizeof resource, "Levels/Level%d/map.json", level->number);
    size_t needed = 0;
    odr_status status = odr_request_resource_path(level->request, resource, NULL, 0, &needed);
    if (status != ODR_E_BUFFER_TOO_SMALL) return fail("ask for the path's size", status);
    char *path = malloc(needed);
    if (!path) return 1;
    status = odr_request_resource_path(level->request, resource, path, needed, NULL);
    if (status != ODR_OK) {
        free(path);
        return fail("resource path", status);
    }
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "error: cannot open %s\n", path);
        free(path);
        return 1;
    }
    uint64_t hash = 0xcbf29ce484222325ULL;
    size_t bytes = 0;
    int c;
    while ((c = fgetc(file)) != EOF) {
        hash = (hash ^ (uint64_t)(unsigned char)c) * 0x100000001b3ULL;
        bytes++;
    }
    fclose(file);
    printf("read %d: %s bytes=%zu fnv1a64=%016" PRIx64 " path=%s\n", level->number, resource, bytes, hash, path);
    free(path);
    return 0;
}

/* Ends and frees a level's request. */
static int finish_level(level *level) {
    CHECK(odr_request_end(level->request), "end");
    if (report_state(level)) return 1;
    odr_request_destroy(level->request);
    level->request = NULL;
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("libodr %s (API %d), built against odr.h %s (API %d)\n", odr_version(), odr_api_version(), ODR_VERSION, ODR_API_VERSION);
        return odr_api_version() == ODR_API_VERSION ? 0 : 1;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s CATALOG-URL STORE-DIRECTORY\n       %s --version\n", argv[0], argv[0]);
        return 2;
    }

    odr_config *config = NULL;
    CHECK(odr_config_create(&config), "create configuration");
    CHECK(odr_config_set_string(config, ODR_OPT_CATALOG_URL, argv[1]), "catalog URL");
    CHECK(odr_config_set_string(config, ODR_OPT_STORE_DIRECTORY, argv[2]), "store directory");
    CHECK(odr_config_set_int(config, ODR_OPT_FREE_SPACE_WATERMARK, 0), "watermark");
    odr_manager *manager = NULL;
    odr_status status = odr_manager_create(config, &manager);
    odr_config_free(config);
    if (status != ODR_OK) return fail("create manager", status);

    /* Before the title screen: the catalog and the initial-install tags. */
    CHECK(odr_manager_prepare(manager, 1, 60000), "prepare");
    int64_t version = 0;
    CHECK(odr_manager_current_version(manager, &version), "catalog version");
    printf("prepared catalog version %" PRId64 "\n", version);
    /* The level-select screen: every tag with what it would download (one block, one odr_free). A
       split catalog (odrpack build's default) describes only the tags this device has used, so the
       screen first describes its levels: a few kilobytes of metadata each, fetched once. */
    const char *const level_tags[LEVELS] = {"level1", "level2", "level3", "level4", "level5"};
    CHECK(odr_manager_describe(manager, level_tags, LEVELS, 60000), "describe the levels");
    odr_tag_info *tags = NULL;
    size_t tag_count = 0;
    CHECK(odr_manager_tags(manager, &tags, &tag_count), "list tags");
    for (size_t i = 0; i < tag_count; i++) printf("tag %s: %" PRId64 " bytes\n", tags[i].name, tags[i].download_bytes);
    odr_free(tags);

    level levels[2];
    level *current = &levels[0], *next = &levels[1];
    if (start_level(manager, current, 1, ODR_PRIORITY_URGENT)) return 1;
    for (int n = 1; n <= LEVELS; n++) {
        if (wait_for_level(manager, current) || read_map(current)) return 1;
        /* Prefetch the next level at a low priority while this one plays. */
        if (n < LEVELS && start_level(manager, next, n + 1, 0.1)) return 1;
        for (int frame = 0; frame < 3; frame++) {
            if (poll_events(manager)) return 1;
            if (n < LEVELS && report_state(next)) return 1;
            next_frame();
        }
        printf("level %d: played\n", n);
        /* The player moves on: the previous level is no longer needed. */
        if (finish_level(current)) return 1;
        level *swap = current;
        current = next;
        next = swap;
    }
    if (poll_events(manager)) return 1;
    odr_manager_destroy(manager);
    /* Every handle is gone: stop the library's threads before the engine goes on without it. */
    CHECK(odr_shutdown(10000), "shut down");
    printf("played %d levels\n", LEVELS);
    return 0;
}
