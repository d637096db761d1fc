/*
 * The C API's request progress, checked from C: the progress callback (values as bytes arrive,
 * never back, never repeated, never closer than the interval, never after end/destroy returns, also
 * when destroyed from inside the callback), odr_request_stalled and ODR_EVENT_DOWNLOAD_RETRYING.
 *
 *   progress_checks CATALOG-URL STORE-DIRECTORY
 *
 * Run by CProgressCallbackTests against a catalog with tags "a", "b", "c" and "d" (one pack of
 * 96 KiB each) on a loopback server at 64 KiB/s that cuts d's first download after 8 KiB. Prints
 * one line per check, then "checks: <n> failed: <m>"; exits 1 if any failed.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime */
#include <odr.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks.h"

static int64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void sleep_ms(long milliseconds) {
    struct timespec wait = { milliseconds / 1000, (milliseconds % 1000) * 1000000L };
    nanosleep(&wait, NULL);
}

/* What a progress callback saw. The plain fields are touched only by the callback (callbacks run
 * one at a time); the atomics are read by the main thread. */
typedef struct tracker {
    int64_t interval_ms;
    odr_request *destroy_inside; /* destroyed by the first callback with bytes, when set */
    long slow_ms;                /* how long each call takes */
    atomic_int inside;           /* a call has started */
    atomic_int calls;
    atomic_int went_back;   /* a value below the one before, or the same value again */
    atomic_int too_soon;    /* two calls closer than the interval */
    atomic_int after_stop;  /* a call after end/destroy returned */
    atomic_int stopped;
    atomic_int stalled_seen;
    atomic_llong completed, total;
    int64_t last_completed, last_total, last_call_ms;
    int last_stalled;
} tracker;

static void on_progress(int64_t completed, int64_t total, int stalled, void *user_data) {
    tracker *seen = user_data;
    if (atomic_load(&seen->stopped)) atomic_fetch_add(&seen->after_stop, 1);
    atomic_store(&seen->inside, 1);
    int64_t now = now_ms();
    if (atomic_fetch_add(&seen->calls, 1) > 0) {
        int same = completed == seen->last_completed && total == seen->last_total && stalled == seen->last_stalled;
        if (completed < seen->last_completed || same) atomic_fetch_add(&seen->went_back, 1);
        /* A millisecond of slack for the clocks' rounding. */
        if (now - seen->last_call_ms < seen->interval_ms - 1) atomic_fetch_add(&seen->too_soon, 1);
    }
    if (stalled) atomic_store(&seen->stalled_seen, 1);
    seen->last_completed = completed;
    seen->last_total = total;
    seen->last_stalled = stalled;
    seen->last_call_ms = now;
    atomic_store(&seen->completed, completed);
    atomic_store(&seen->total, total);
    if (seen->slow_ms > 0) sleep_ms(seen->slow_ms);
    /* Still running when end/destroy returned: they did not wait for this call. */
    if (atomic_load(&seen->stopped)) atomic_fetch_add(&seen->after_stop, 1);
    if (seen->destroy_inside && completed > 0) {
        odr_request_destroy(seen->destroy_inside);
        seen->destroy_inside = NULL;
        atomic_store(&seen->stopped, 1);
    }
}

static void ignore(odr_status status, const char *message, void *user_data) {
    (void)status;
    (void)message;
    (void)user_data;
}

static odr_request *request_for(odr_manager *manager, const char *tag) {
    const char *const tags[] = { tag };
    odr_request *request = NULL;
    odr_request_create(manager, tags, 1, &request);
    return request;
}

/* Waits (as a frame loop does, every 5 ms) until *flag is set, at most a minute. */
static int wait_until_set(atomic_int *flag) {
    for (int i = 0; i < 12000 && !atomic_load(flag); i++) sleep_ms(5);
    return atomic_load(flag);
}

static void argument_checks(odr_request *request) {
    int stalled = 0;
    int64_t retry_in = 0;
    EXPECT(odr_request_set_progress_callback(NULL, on_progress, NULL, 0), ODR_E_INVALID_ARGUMENT, "set_progress_callback(NULL)");
    EXPECT(odr_request_set_progress_callback(request, on_progress, NULL, -1), ODR_E_INVALID_ARGUMENT, "a negative interval");
    EXPECT(odr_request_set_progress_callback(request, on_progress, NULL, 86400001), ODR_E_INVALID_ARGUMENT, "an interval over a day");
    EXPECT(odr_request_set_progress_callback(request, NULL, NULL, 0), ODR_OK, "removing a callback that was never set");
    EXPECT(odr_request_stalled(NULL, &stalled, &retry_in), ODR_E_INVALID_ARGUMENT, "stalled(NULL)");
    EXPECT(odr_request_stalled(request, NULL, NULL), ODR_OK, "stalled with NULL out-pointers");
    EXPECT(odr_request_stalled(request, &stalled, &retry_in), ODR_OK, "stalled before begin");
    TRUE_THAT(stalled == 0 && retry_in == -1, "a request not begun is not stalled");
}

/* Values as bytes arrive, in order, at most one per interval, the last one complete. */
static void callback_checks(odr_manager *manager) {
    odr_request *request = request_for(manager, "a");
    argument_checks(request);
    static tracker seen = { .interval_ms = 50 };
    EXPECT(odr_request_set_progress_callback(request, on_progress, &seen, seen.interval_ms), ODR_OK, "set a progress callback");
    EXPECT(odr_request_begin_wait(request, 60000), ODR_OK, "begin and wait");
    /* The value that makes the request usable follows the begin's return at once. */
    for (int i = 0; i < 1000 && !(atomic_load(&seen.total) > 0 && atomic_load(&seen.completed) == atomic_load(&seen.total)); i++) sleep_ms(5);
    int64_t completed = -1, total = -1;
    EXPECT(odr_request_progress(request, &completed, &total), ODR_OK, "progress");
    TRUE_THAT(total >= 96 * 1024 && completed == total, "the request's progress is complete, in bytes");
    TRUE_THAT(atomic_load(&seen.total) == total && atomic_load(&seen.completed) == total, "the callback's last value is the complete one");
    /* 96 KiB at 64 KiB/s: 1.5 s of bytes, a value at most every 50 ms. */
    printf("progress-calls %d\n", atomic_load(&seen.calls));
    TRUE_THAT(atomic_load(&seen.calls) >= 5, "the callback runs as bytes arrive");
    TRUE_THAT(atomic_load(&seen.went_back) == 0, "values never go back or repeat");
    TRUE_THAT(atomic_load(&seen.too_soon) == 0, "calls are at least the interval apart");
    int stalled = -1;
    int64_t retry_in = 0;
    EXPECT(odr_request_stalled(request, &stalled, &retry_in), ODR_OK, "stalled after the begin");
    TRUE_THAT(stalled == 0 && retry_in == -1, "a usable request is not stalled");
    EXPECT(odr_request_end(request), ODR_OK, "end");
    atomic_store(&seen.stopped, 1);
    sleep_ms(200);
    TRUE_THAT(atomic_load(&seen.after_stop) == 0, "no call after odr_request_end returned");
    odr_request_destroy(request);
}

/* After destroy returns the callback never runs again: its context can be freed at once. */
static void lifetime_checks(odr_manager *manager) {
    odr_request *request = request_for(manager, "b");
    tracker *seen = calloc(1, sizeof *seen);
    if (!seen) return;
    seen->slow_ms = 100;
    EXPECT(odr_request_set_progress_callback(request, on_progress, seen, 0), ODR_OK, "set a callback on a heap context");
    EXPECT(odr_request_begin(request, ignore, NULL), ODR_OK, "begin b");
    /* Destroyed while a call is running: destroy waits for it to return. */
    TRUE_THAT(wait_until_set(&seen->inside), "b's callback ran");
    odr_request_destroy(request);
    atomic_store(&seen->stopped, 1);
    int calls = atomic_load(&seen->calls);
    sleep_ms(300);
    TRUE_THAT(atomic_load(&seen->after_stop) == 0 && atomic_load(&seen->calls) == calls, "no call after odr_request_destroy returned");
    free(seen);

    /* Destroyed from inside its own callback: that call returns, and no other follows. */
    static tracker inside;
    odr_request *other = request_for(manager, "c");
    inside.destroy_inside = other;
    EXPECT(odr_request_set_progress_callback(other, on_progress, &inside, 0), ODR_OK, "set c's callback");
    EXPECT(odr_request_begin(other, ignore, NULL), ODR_OK, "begin c");
    TRUE_THAT(wait_until_set(&inside.stopped), "c was destroyed from inside its callback");
    int inside_calls = atomic_load(&inside.calls);
    sleep_ms(300);
    TRUE_THAT(atomic_load(&inside.after_stop) == 0 && atomic_load(&inside.calls) == inside_calls, "no call after destroy from inside the callback");
}

/* d's first download is cut after 8 KiB: the retry is an event, and the request says it is stalled. */
static void stall_checks(odr_manager *manager) {
    odr_request *request = request_for(manager, "d");
    static tracker seen;
    static atomic_int finished;
    int saw_stalled = 0, saw_event = 0, event_ok = 0;
    EXPECT(odr_request_set_progress_callback(request, on_progress, &seen, 0), ODR_OK, "set d's callback");
    EXPECT(odr_request_begin(request, ignore, NULL), ODR_OK, "begin d");
    for (int i = 0; i < 12000; i++) {
        int stalled = 0;
        int64_t retry_in = -2;
        odr_request_state state = ODR_REQUEST_INITIAL;
        odr_request_stalled(request, &stalled, &retry_in);
        if (stalled) saw_stalled |= retry_in >= 0 && retry_in <= 31000 ? 1 : 2;
        odr_event event = ODR_EVENT_INIT;
        while (odr_manager_poll_event(manager, &event) == ODR_OK && event.kind != ODR_EVENT_NONE) {
            if (event.kind == ODR_EVENT_DOWNLOAD_RETRYING) {
                saw_event = 1;
                event_ok = strcmp(event.purge_reason, "network-unavailable") == 0 && strlen(event.pack_id) == 64
                    && event.retry_in_ms >= 0 && event.retry_in_ms <= 31000;
            }
            event = (odr_event)ODR_EVENT_INIT;
        }
        odr_request_state_get(request, &state);
        if (state == ODR_REQUEST_ACCESSING) {
            atomic_store(&finished, 1);
            break;
        }
        sleep_ms(5);
    }
    TRUE_THAT(atomic_load(&finished), "d became usable after the cut");
    TRUE_THAT(saw_event && event_ok, "the retry was an ODR_EVENT_DOWNLOAD_RETRYING with its reason and delay");
    TRUE_THAT(saw_stalled == 1, "odr_request_stalled said stalled, with the time to the next attempt");
    TRUE_THAT(atomic_load(&seen.stalled_seen), "the callback said stalled");
    int stalled = -1;
    int64_t retry_in = 0;
    odr_request_stalled(request, &stalled, &retry_in);
    TRUE_THAT(stalled == 0 && retry_in == -1, "not stalled once usable");

    /* A version 2 event ends before retry_in_ms: nothing is written past it. */
    odr_event old;
    memset(&old, 0xab, sizeof old);
    old.version = 2;
    EXPECT(odr_manager_poll_event(manager, &old), ODR_OK, "poll with a version 2 event");
    unsigned char untouched[sizeof old.retry_in_ms];
    memset(untouched, 0xab, sizeof untouched);
    TRUE_THAT(memcmp(&old.retry_in_ms, untouched, sizeof untouched) == 0, "a version 2 event is filled only up to its own end");
    odr_request_destroy(request);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CATALOG-URL STORE-DIRECTORY\n", argv[0]);
        return 2;
    }
    odr_manager *manager = checks_manager(argv[1], argv[2]);
    if (!manager) return 1;
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare");

    callback_checks(manager);
    lifetime_checks(manager);
    stall_checks(manager);
    odr_manager_destroy(manager);

    printf("checks: %d failed: %d\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
