/*
 * odr.h: the C API of swift-odr's on-demand resource runtime (libodr).
 *
 * One header, one library: link with `$(pkg-config --cflags --libs odr)`.
 * Reference: docs/C-API.md. Every symbol and macro starts with `odr_` / `ODR_`.
 *
 * Rules that hold for every function below:
 *  - Every function that can fail returns an `odr_status`; ODR_OK (0) is success. On failure
 *    `odr_error_message()` on the same thread says what went wrong and what to do.
 *  - Out-parameters come last. A NULL handle, a NULL required pointer, an empty or invalid tag list
 *    or a string that is not UTF-8 is ODR_E_INVALID_ARGUMENT, never a crash.
 *  - Every function is thread-safe: any thread may call any function on any handle at any time.
 *    (Using a handle after its `_destroy` is, as with `free`, undefined.)
 *  - Ownership: the caller owns what it passes in (the library copies strings and tag lists before
 *    returning) and frees handles with their own `_destroy`/`_free` function, nothing else. Strings
 *    the library returns are owned by the library: `odr_version()` and `odr_status_name()` are
 *    static, `odr_error_message()` stays valid until the next failing call on the same thread.
 *  - Callbacks (`odr_completion`) run on a thread the library owns, one at a time, never on the
 *    caller's thread; a function that takes one calls it exactly once if it returned ODR_OK, and
 *    never if it returned an error. Callbacks may call any odr function, including blocking ones
 *    and the `_destroy` of their own request; they should return quickly. `user_data` is passed
 *    through untouched.
 *  - Callback lifetime: when `odr_request_destroy`, `odr_request_end` or `odr_request_cancel`
 *    returns, every callback of that request's begins has returned (with ODR_E_CANCELLED if the
 *    call stopped the begin), and the library never touches their `user_data` again: free it. The
 *    same holds for `odr_manager_destroy` and its `odr_manager_prepare_async` callbacks, and for
 *    the network probe (`odr_config_set_network_probe`). These functions wait for a callback that
 *    is running on the library's thread, so a callback must not wait for a thread that is calling
 *    one of them. Called from inside the callback itself they return without waiting; called from
 *    inside another callback they may run the stopped call's callback right there, nested.
 *  - Failed calls leave out-parameters untouched, except where a function says otherwise.
 */
#ifndef ODR_H
#define ODR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define ODR_EXTERN extern "C" __attribute__((visibility("default")))
#else
#define ODR_EXTERN extern __attribute__((visibility("default")))
#endif

/** The library version this header belongs to; `odr_version()` returns the linked library's. */
#define ODR_VERSION "0.1.0"
/** Bumped when the API changes incompatibly; compare with `odr_api_version()` at startup. */
#define ODR_API_VERSION 1

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * What a call did. The values never change meaning. Every code of the Swift runtime's
 * `ResourceError.Code` has exactly one counterpart here (its stable name is `odr_status_name()`);
 * the codes from 100 up exist only in the C API.
 */
typedef enum odr_status {
    ODR_OK = 0,

    /* Network and server */
    ODR_E_NETWORK_UNAVAILABLE = 1,   /* "network-unavailable": no connection; retried, then reported */
    ODR_E_RESOURCE_UNAVAILABLE = 2,  /* "resource-unavailable": HTTP 404/410 or missing file:// path */
    ODR_E_ACCESS_DENIED = 3,         /* "access-denied": HTTP 401/403; check extra headers */
    ODR_E_SERVER_ERROR = 4,          /* "server-error": 5xx/429 after every retry */
    ODR_E_UNEXPECTED_RESPONSE = 5,   /* "unexpected-response": an answer the runtime cannot use */
    ODR_E_TIMED_OUT = 6,             /* "timed-out": connecting or the transfer stalled */
    ODR_E_UNTRUSTED_SERVER = 7,      /* "untrusted-server": TLS certificate not verified */
    ODR_E_RANGE_NOT_SUPPORTED = 8,   /* "range-not-supported": a byte range could not be fetched */
    ODR_E_NETWORK_POLICY = 9,        /* "network-policy": the download policy forbids it (metered
                                        network, daily budget) and ODR_OPT_POLICY_WAITS is 0 */

    /* Content */
    ODR_E_INTEGRITY = 20,            /* "integrity": size or SHA-256 differs from the catalog's */
    ODR_E_INVALID_CATALOG = 21,      /* "invalid-catalog": a catalog or manifest failed validation */
    ODR_E_INVALID_TAG = 22,          /* "invalid-tag": a tag the catalog does not define */
    ODR_E_INVALID_ARGUMENT = 23,     /* "invalid-argument": NULL, out of range, not UTF-8, ... */

    /* Local storage */
    ODR_E_OUT_OF_SPACE = 30,         /* "out-of-space": not enough disk even after purging */
    ODR_E_EXCEEDED_MAXIMUM_IN_USE_SIZE = 31, /* "exceeded-maximum-in-use-size": see ODR_OPT_IN_USE_LIMIT */
    ODR_E_STORAGE_FAILURE = 32,      /* "storage-failure": a file or the database failed */
    ODR_E_CACHE_BUDGET_EXCEEDED = 33, /* "cache-budget-exceeded": over ODR_OPT_CACHE_BUDGET even after purging */

    /* Requests and control */
    ODR_E_CANCELLED = 40,            /* "cancelled": cancelled, or ended before it was ready */
    ODR_E_BEGIN_TWICE = 41,          /* "begin-twice": begin on a request already begun */
    ODR_E_BEGIN_AFTER_END = 42,      /* "begin-after-end": begin on an ended request */
    ODR_E_END_BEFORE_BEGIN = 43,     /* "end-before-begin": end on a request not begun, or ended */

    /* Catalog */
    ODR_E_CATALOG_ROLLBACK = 50,     /* "catalog-rollback": the server sent an older catalog */
    ODR_E_CATALOG_UNAVAILABLE = 51,  /* "catalog-unavailable": no catalog yet; prepare first */
    ODR_E_UNKNOWN_RESOURCE = 52,     /* "unknown-resource": the request holds no such resource */
    ODR_E_RESOURCE_NOT_INSTALLED = 53, /* "resource-not-installed": the request is not accessing */
    ODR_E_UNTRUSTED_CATALOG = 54,    /* "untrusted-catalog": catalog.json lacks the trusted signatures */
    ODR_E_CATALOG_EXPIRED = 55,      /* "catalog-expired": the signed catalog's `expires` has passed */

    /* Only in the C API */
    ODR_E_BUFFER_TOO_SMALL = 100,    /* "buffer-too-small": *out_needed says the size needed */
    ODR_E_WAIT_TIMEOUT = 101,        /* "wait-timeout": a blocking call's timeout passed first */
    ODR_E_SHARE_STOPPED = 102,       /* "share-stopped": the share was stopped (odr_share_stop) */
    ODR_E_BIND_FAILED = 103,         /* "bind-failed": a share cannot listen on that host and port
                                        (the port is taken, the host is not this machine's) */
    ODR_E_UNSUPPORTED = 104,         /* "unsupported": this build of the library leaves the function
                                        out (sharing: build with make install SHARING=1) */
    ODR_E_OTHER = 199                /* "other": a runtime error newer than this header */
} odr_status;

/** The stable name of a status ("invalid-tag"), the same string as the Swift code's raw value;
 *  "unknown-status" for a value that is not a status. Static: never free it. */
ODR_EXTERN const char *odr_status_name(odr_status status);

/** The message of the most recent failed call on the calling thread ("" when none failed): what
 *  went wrong and what to do. Owned by the library; valid until the next failing call on this
 *  thread. */
ODR_EXTERN const char *odr_error_message(void);

/** The status of the most recent failed call on the calling thread (ODR_OK when none failed). */
ODR_EXTERN odr_status odr_error_status(void);

/** Forgets the calling thread's last error. */
ODR_EXTERN void odr_error_clear(void);

/** The linked library's version ("0.1.0"). Static: never free it. */
ODR_EXTERN const char *odr_version(void);

/** The linked library's ODR_API_VERSION. */
ODR_EXTERN int odr_api_version(void);

/* ------------------------------------------------------------------------------------------ */
/* Handles and callbacks                                                                      */
/* ------------------------------------------------------------------------------------------ */

/** Settings for a manager; grows through options, so new settings never break old callers. */
typedef struct odr_config odr_config;
/** Downloads, installs, tracks and purges the packs of one catalog. */
typedef struct odr_manager odr_manager;
/** A request for the resources of some tags, as a game asks for a level. */
typedef struct odr_request odr_request;
/** An anticipation hint: tags the game will probably request soon (see odr_anticipate). */
typedef struct odr_hint odr_hint;
/** A manager's store shared with peers on the local network (see odr_manager_start_sharing). */
typedef struct odr_share odr_share;

/**
 * Called once when an asynchronous call finishes: `status` is ODR_OK or the error, `message` the
 * error's message ("" on success; valid only during the call), `user_data` what the caller passed.
 * Runs on a library thread (see the top of this file).
 */
typedef void (*odr_completion)(odr_status status, const char *message, void *user_data);

/* ------------------------------------------------------------------------------------------ */
/* Configuration                                                                              */
/* ------------------------------------------------------------------------------------------ */

/** The settings of a configuration. String options take `odr_config_set_string`, number options
 *  `odr_config_set_int`; the other setter is ODR_E_INVALID_ARGUMENT. Byte counts above 2^60 (more
 *  than any disk) are taken as 2^60, here and in the purge functions. */
typedef enum odr_option {
    /* Strings */
    ODR_OPT_CATALOG_URL = 1,        /* required: http://, https://, file:// URL, or a local folder */
    ODR_OPT_STORE_DIRECTORY = 2,    /* required: where installed packs and the database live */
    ODR_OPT_DISTRIBUTION = 3,       /* the distribution to follow; default "live" */
    ODR_OPT_BUNDLED_CATALOG = 4,    /* a catalog folder shipped with the game; NULL for none */
    ODR_OPT_TRUSTED_KEY = 5,        /* adds a trusted Ed25519 public key: its 64 hex digits, or the
                                       path of a NAME.pub from `odrpack key generate`; NULL removes
                                       every key. With keys, only signed catalogs are accepted
                                       (docs/SECURITY.md) */
    ODR_OPT_VARIANT = 6,            /* this device's choice on one variant axis, best value first:
                                       "resolution=2x,1x" (2x, else 1x); one call per axis, a later
                                       call for the same axis replaces it; NULL removes every
                                       choice. An axis not set takes the catalog's declared order.
                                       Requests download only the chosen variants' packs (plus the
                                       common ones) and resource paths resolve to the chosen file */
    ODR_OPT_MIRROR = 7,             /* adds another origin serving the same catalog (an http:// or
                                       https:// URL), tried after ODR_OPT_CATALOG_URL in the order
                                       added; NULL removes every mirror. A download that fails on
                                       one origin continues on the next where it stopped; the
                                       failing origin is avoided for a minute (docs/HOSTING.md) */
    ODR_OPT_PEER = 8,               /* adds a peer: another device's store shared with `odr share`
                                       (its http:// or https:// URL), asked first for each file an
                                       install needs; every byte is checked against the catalog's
                                       digests, and a peer that fails or lies is dropped for the
                                       rest of the install; NULL removes every peer. None by
                                       default (docs/STORE.md, "Local network peers") */
    ODR_OPT_CATALOG_ID = 109,       /* the id of the catalog meant (the "id" of its catalog.json);
                                       NULL (default) for the one the URLs serve. A catalog.json of
                                       another id is refused; offline, a store that has not seen
                                       the URLs serve a catalog (after a CDN move) uses its stored
                                       catalog of this id (docs/STORE.md) */

    /* Numbers */
    ODR_OPT_IN_USE_LIMIT = 100,     /* most bytes in use at once; default 2 GiB; > 0 */
    ODR_OPT_CACHE_BUDGET = 101,     /* most bytes of installed packs; -1 (default) for no budget */
    ODR_OPT_FREE_SPACE_WATERMARK = 102, /* purge below this many free bytes; default 256 MiB; >= 0 */
    ODR_OPT_MAX_CONCURRENT_TRANSFERS = 103, /* downloads at once; default 4; 1...64 */
    ODR_OPT_SIGNATURE_THRESHOLD = 104, /* distinct trusted keys that must sign; default 1; 1...trusted keys */
    ODR_OPT_ALLOW_UNSIGNED_MIRRORS = 105, /* 1: accept an unsigned catalog.json from a mirror; 0
                                       (default): only from the primary. Without trusted keys
                                       nothing proves a mirror serves the published catalog */
    ODR_OPT_CONNECT_TIMEOUT_MS = 106, /* milliseconds to connect to an origin; default 5000;
                                       100...600000; doubled on each retry of an origin that did
                                       not answer (docs/TRANSFERS.md) */
    ODR_OPT_FIRST_BYTE_TIMEOUT_MS = 107, /* milliseconds from connecting to the first byte of the
                                       answer: a host that accepts and never answers costs this
                                       before the next origin; default 5000; 100...600000, or 0 for
                                       no limit (the stall rule alone); raise it for links with
                                       multi-second latency */
    ODR_OPT_FAILOVER_STALL_TIMEOUT_MS = 108, /* milliseconds a download's body may go without a byte
                                       before it continues on another origin (only with mirrors);
                                       default 5000; 100...600000, or 0 for no limit */
    ODR_OPT_DISCOVER_PEERS = 110,   /* 1: installs also ask peers found on the local network (the
                                       DNS-SD service _odr._tcp browsed through Avahi on the system
                                       D-Bus, keeping those announcing this catalog's id, at most
                                       8), after the ODR_OPT_PEER ones; a discovery is reused for a
                                       minute; without a bus or Avahi installs go on without them
                                       and the store's log says why. 0 (default): no discovery */
    ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS = 111, /* milliseconds a discovery waits for Avahi at most;
                                       default 2000; 100...60000 */
    ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS = 112, /* milliseconds a peer gets from a request's start,
                                       connecting included, to the body's first byte, or it is
                                       dropped for the install and the origins serve its part;
                                       default 100 (a wired LAN answers in milliseconds; raise it
                                       for peers behind Wi-Fi power saving); 10...60000 */

    /* Numbers: the download policy (docs/RUNTIME.md, "Download policy") */
    ODR_OPT_METERED_URGENT = 120,   /* 1 (default): urgent downloads may use a metered network; 0: not */
    ODR_OPT_METERED_NON_URGENT = 121, /* 1: prefetch and low-priority downloads may use a metered
                                       network; 0 (default): they wait for an unmetered one */
    ODR_OPT_METERED_DAILY_BUDGET = 122, /* most bytes a day (UTC) over metered networks; -1 (default)
                                       for no limit */
    ODR_OPT_POLICY_WAITS = 123,     /* 1 (default): a download the policy forbids waits for a change;
                                       0: it fails with ODR_E_NETWORK_POLICY */
    ODR_OPT_NON_URGENT_RATE = 124,  /* bytes per second non-urgent downloads may take while an urgent
                                       one runs: 0 (default) pauses them, -1 leaves them unlimited */
    ODR_OPT_NETWORK_METERED = 125   /* whether the network is metered, when no probe is set
                                       (odr_config_set_network_probe): -1 (default) asks
                                       NetworkManager over the system D-Bus, never starting a
                                       process (unmetered without one); 0: unmetered, never asks;
                                       1: metered, never asks */
} odr_option;

/** Creates a configuration with the defaults; free it with `odr_config_free`. */
ODR_EXTERN odr_status odr_config_create(odr_config **out_config);

/** Frees a configuration (NULL is ignored). Managers created from it keep their own copy. */
ODR_EXTERN void odr_config_free(odr_config *config);

/** Sets a string option; the library copies `value`. NULL clears an optional one. */
ODR_EXTERN odr_status odr_config_set_string(odr_config *config, odr_option option, const char *value);

/** Sets a number option. */
ODR_EXTERN odr_status odr_config_set_int(odr_config *config, odr_option option, int64_t value);

/** Adds a header sent with every request for the catalog (for example "Authorization"); a second
 *  call with the same name replaces the value. Names and values may not hold CR, LF or NUL;
 *  names may not be empty or hold ':'. */
ODR_EXTERN odr_status odr_config_add_header(odr_config *config, const char *name, const char *value);

/* ------------------------------------------------------------------------------------------ */
/* Manager                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/** Opens the store (repairing what a crash left) and, when it holds a copy of the catalog, makes it
 *  usable at once. Destroy the manager with `odr_manager_destroy`. */
ODR_EXTERN odr_status odr_manager_create(const odr_config *config, odr_manager **out_manager);

/** Releases the caller's manager handle (NULL is ignored). Requests still alive keep the manager
 *  working until they are destroyed too. A preparation started by `odr_manager_prepare_async` and
 *  still running is cancelled: its callback has returned (ODR_E_CANCELLED) when this returns, and
 *  the network probe is never called again. */
ODR_EXTERN void odr_manager_destroy(odr_manager *manager);

/** Fetches the catalog (or uses the stored copy; `online` 0 never touches the network), installs the
 *  initial-install tags and starts the prefetch tags in the background. Blocks for at most
 *  `timeout_ms` milliseconds (negative: no limit); ODR_E_WAIT_TIMEOUT when that passes first (the
 *  preparation is cancelled; call again). */
ODR_EXTERN odr_status odr_manager_prepare(odr_manager *manager, int online, int64_t timeout_ms);

/** `odr_manager_prepare` without blocking: `done` is called once with the outcome. */
ODR_EXTERN odr_status odr_manager_prepare_async(odr_manager *manager, int online, odr_completion done, void *user_data);

/** The catalog version requests use now; ODR_E_CATALOG_UNAVAILABLE before any catalog. */
ODR_EXTERN odr_status odr_manager_current_version(odr_manager *manager, int64_t *out_version);

/** The bytes a request for `tags` would download now: 0 when installed, and once a running download
 *  has nothing left to move (installed only at ODR_EVENT_TAG_AVAILABLE). Only falls while it runs. */
ODR_EXTERN odr_status odr_manager_download_size(odr_manager *manager, const char *const *tags, size_t tag_count, int64_t *out_bytes);

/** Makes the catalog describe `tags`. A split catalog (what `odrpack build` writes by default) is fetched
 *  only for the tags a client uses: the initial-install and prefetch tags and those it held before.
 *  A begin describes its own tags, so call this only before `odr_manager_download_size`,
 *  `odr_manager_set_preservation_priority` or `odr_anticipate` for a tag no request has used yet:
 *  they give ODR_E_CATALOG_UNAVAILABLE for it until then. Fetches each tag's metadata the store lacks
 *  (a few kilobytes), checks it against the signed catalog and stores it; returns at once for a whole
 *  catalog or tags already described. Blocks for at most `timeout_ms` milliseconds (negative: no
 *  limit); ODR_E_WAIT_TIMEOUT when that passes first (nothing is lost; call again).
 *  ODR_E_INVALID_TAG for a tag the catalog does not define, ODR_E_CATALOG_UNAVAILABLE before
 *  `odr_manager_prepare`, transfer and ODR_E_INTEGRITY errors as a begin gives them. */
ODR_EXTERN odr_status odr_manager_describe(odr_manager *manager, const char *const *tags, size_t tag_count, int64_t timeout_ms);

/** Sets the preservation priority (0...1) of tags; persists across launches. Packs of tags with a
 *  higher priority are purged later. */
ODR_EXTERN odr_status odr_manager_set_preservation_priority(odr_manager *manager, const char *const *tags, size_t tag_count, double priority);

/** The preservation priority of one tag: the game's setting or the catalog's default. */
ODR_EXTERN odr_status odr_manager_preservation_priority(odr_manager *manager, const char *tag, double *out_priority);

/** What purging `bytes` would delete, without deleting anything. Each out-pointer may be NULL:
 *  the bytes the deletions free, what even deleting every pack not in use leaves missing, and the
 *  number of packs. */
ODR_EXTERN odr_status odr_manager_purge_plan(odr_manager *manager, int64_t bytes, int64_t *out_bytes_freed, int64_t *out_shortfall, int64_t *out_pack_count);

/** Deletes packs no request uses until `bytes` are freed (or nothing more can go); blocks until
 *  done. Each deleted pack is also an ODR_EVENT_PACK_PURGED event. Out-pointers as in
 *  `odr_manager_purge_plan`. */
ODR_EXTERN odr_status odr_manager_purge(odr_manager *manager, int64_t bytes, int64_t *out_bytes_freed, int64_t *out_shortfall, int64_t *out_pack_count);

/** What happened in a manager. */
typedef enum odr_event_kind {
    ODR_EVENT_NONE = 0,              /* no event was waiting */
    ODR_EVENT_PACK_INSTALLED = 1,    /* pack_id installed; bytes = its installed size */
    ODR_EVENT_PACK_PURGED = 2,       /* pack_id deleted for purge_reason; bytes = bytes freed */
    ODR_EVENT_LOW_DISK_SPACE = 3,    /* even purging left too little: bytes = free bytes; end requests */
    ODR_EVENT_CATALOG_UPDATED = 4,   /* the catalog moved to `version` */
    ODR_EVENT_DOWNLOAD_WAITING = 5,  /* pack_id waits for the download policy; purge_reason holds why:
                                        "metered-non-urgent-not-allowed", "metered-urgent-not-allowed",
                                        "metered-budget-exhausted" or "offline" */
    ODR_EVENT_DOWNLOAD_RESUMED = 6,  /* pack_id, which waited, may download now */
    /* Since ODR_EVENT_VERSION 2 (an event of version 1 never has these kinds): */
    ODR_EVENT_TAG_AVAILABLE = 20,    /* every pack `tag` needs is installed: a request begins at once */
    ODR_EVENT_TAG_PURGED = 21,       /* a pack `tag` needs was purged: a request downloads again */
    ODR_EVENT_CATALOG_CHECK_FAILED = 22, /* the catalog could not be checked online; the stored copy
                                        is used (offline play). purge_reason holds the error code,
                                        e.g. "network-unavailable" */
    /* Since ODR_EVENT_VERSION 3: */
    ODR_EVENT_DOWNLOAD_RETRYING = 23 /* an attempt to download pack_id failed (purge_reason holds why:
                                        "network-unavailable", "timed-out", "server-error"); the next
                                        starts in retry_in_ms. Posted as the attempt fails; meanwhile
                                        the requests waiting for it are stalled */
} odr_event_kind;

#define ODR_EVENT_VERSION 3
/** Initializes an odr_event: `odr_event event = ODR_EVENT_INIT;` */
#define ODR_EVENT_INIT { ODR_EVENT_VERSION, ODR_EVENT_NONE, 0, 0, 0, "", "", "", 0 }

/** One event; set `version` to ODR_EVENT_VERSION (ODR_EVENT_INIT does) so later fields can be added. */
typedef struct odr_event {
    unsigned int version;
    odr_event_kind kind;
    int64_t bytes;
    int64_t catalog_version;
    /** Events dropped before this one because nobody polled (the queue keeps the newest 1024). */
    int64_t missed;
    /** The pack's id (64 hex digits of its SHA-256), NUL-terminated; "" for other kinds. */
    char pack_id[72];
    /** Why a pack was purged: "least-recently-used", "low-preservation-priority", "superseded",
     *  "variant-not-chosen" (see ODR_OPT_VARIANT), "closest-fit", or another policy's stable name;
     *  for ODR_EVENT_DOWNLOAD_WAITING why the download waits, for ODR_EVENT_DOWNLOAD_RETRYING
     *  why the attempt failed; "" for other kinds. */
    char purge_reason[64];
    /** Version 2: the tag of ODR_EVENT_TAG_AVAILABLE and ODR_EVENT_TAG_PURGED, NUL-terminated;
     *  "" for other kinds. A caller built with version 1 of this struct is never written past
     *  purge_reason, and gets no tag events. */
    char tag[136];
    /** Version 3: for ODR_EVENT_DOWNLOAD_RETRYING the milliseconds from the poll until the next
     *  attempt (0 when it is due); 0 for other kinds. A caller built with an earlier version of
     *  this struct is never written past its own last field, and gets no retrying events. */
    int64_t retry_in_ms;
} odr_event;

/** Takes the oldest waiting event without blocking; `out_event->kind` is ODR_EVENT_NONE when there
 *  is none. Events are recorded from the moment odr_manager_create returns; poll once per frame. */
ODR_EXTERN odr_status odr_manager_poll_event(odr_manager *manager, odr_event *out_event);

/* ------------------------------------------------------------------------------------------ */
/* Requests                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/** Where a request stands: INITIAL --begin--> REQUESTED --installed--> ACCESSING --end--> ENDED.
 *  A failed or cancelled begin returns to INITIAL with nothing held. */
typedef enum odr_request_state {
    ODR_REQUEST_INITIAL = 0,
    ODR_REQUEST_REQUESTED = 1,
    ODR_REQUEST_ACCESSING = 2,
    ODR_REQUEST_ENDED = 3
} odr_request_state;

/** The loading priority that takes the bandwidth: the player is waiting. */
#define ODR_PRIORITY_URGENT (-1.0)

/** Creates a request for `tag_count` tags (at least one; each non-NULL UTF-8; duplicates are
 *  ignored). Tags are checked against the catalog when it begins. The request keeps its manager
 *  alive. Destroy it with `odr_request_destroy`. */
ODR_EXTERN odr_status odr_request_create(odr_manager *manager, const char *const *tags, size_t tag_count, odr_request **out_request);

/** Ends the request if it is requested or accessing, and frees it (NULL is ignored). A completion
 *  of a begin still running is called with ODR_E_CANCELLED, and has returned when this returns. */
ODR_EXTERN void odr_request_destroy(odr_request *request);

/** Starts downloading what the tags need (joining downloads already running) and holding their
 *  packs; returns at once. On ODR_OK the request is already REQUESTED (or ACCESSING), so a second
 *  begin returns ODR_E_BEGIN_TWICE, and `done` is called once: ODR_OK when the request is
 *  accessing. What the begin finds at once is returned, not passed to `done`: ODR_E_BEGIN_TWICE,
 *  ODR_E_BEGIN_AFTER_END, ODR_E_INVALID_TAG, ODR_E_CATALOG_UNAVAILABLE,
 *  ODR_E_EXCEEDED_MAXIMUM_IN_USE_SIZE. */
ODR_EXTERN odr_status odr_request_begin(odr_request *request, odr_completion done, void *user_data);

/** `odr_request_begin` that blocks for at most `timeout_ms` milliseconds (negative: no limit).
 *  ODR_E_WAIT_TIMEOUT when the timeout passes first: the begin is cancelled, the request is back in
 *  INITIAL and downloads other requests need go on. */
ODR_EXTERN odr_status odr_request_begin_wait(odr_request *request, int64_t timeout_ms);

/** Begins only if every pack is installed already; never downloads, never blocks. `*out_began` is
 *  1 when the request is now accessing, 0 (nothing changed) when something is missing, a tag is
 *  unknown, the in-use limit would be exceeded or the request is not INITIAL. */
ODR_EXTERN odr_status odr_request_conditionally_begin(odr_request *request, int *out_began);

/** Stops accessing: the packs may be purged once no other request holds them. Ending a request
 *  still downloading cancels its wait (its begin completes with ODR_E_CANCELLED, and that callback
 *  has returned when this returns). */
ODR_EXTERN odr_status odr_request_end(odr_request *request);

/** Sets how urgently to download: 0...1 (higher first; default 0.5), or ODR_PRIORITY_URGENT.
 *  Changing it while downloading reorders the transfers. */
ODR_EXTERN odr_status odr_request_set_loading_priority(odr_request *request, double priority);

/** The loading priority: 0...1, or ODR_PRIORITY_URGENT. */
ODR_EXTERN odr_status odr_request_loading_priority(odr_request *request, double *out_priority);

/** Cancels the begin in progress: it completes with ODR_E_CANCELLED and the request is back in
 *  INITIAL (downloads other requests need go on); both have happened, and the callback has
 *  returned, when this returns. Nothing happens when no begin is running. */
ODR_EXTERN odr_status odr_request_cancel(odr_request *request);

/** Pauses this request's downloads (those no other request waits for). */
ODR_EXTERN odr_status odr_request_pause(odr_request *request);

/** Resumes downloads paused by `odr_request_pause`. */
ODR_EXTERN odr_status odr_request_resume(odr_request *request);

/** The request's state. */
ODR_EXTERN odr_status odr_request_state_get(odr_request *request, odr_request_state *out_state);

/** Progress, without blocking, in archive bytes of the packs the request waits for: bytes held or
 *  received so far, and in all (0 when everything was installed). Entries kept from an interrupted
 *  download or reused from installed packs count as done; then bytes count as they arrive (a new
 *  value at least every 16 KiB or 100 ms); values never decrease. `completed == total` only once the
 *  request is accessing. Either pointer may be NULL. */
ODR_EXTERN odr_status odr_request_progress(odr_request *request, int64_t *out_completed_bytes, int64_t *out_total_bytes);

/* ------------------------------------------------------------------------------------------ */
/* Anticipation hints                                                                         */
/* ------------------------------------------------------------------------------------------ */

/** Hints that `tag_count` tags (at least one; each non-NULL UTF-8) will probably be requested soon,
 *  with `likelihood` in [0, 1]. While the hint lives, the missing packs of its tags download in the
 *  background at the lowest priority (paused while a request waits for a download; only where the download
 *  policy allows non-urgent downloads; only when they fit the cache budget without purging a pack a
 *  request holds or an at least as likely hint names), and purging keeps its packs after every
 *  unhinted one, the least likely first. A hint holds nothing in use: it never counts toward the
 *  in-use limit and never makes a request fail. Several hints may name the same tags.
 *  Errors: ODR_E_INVALID_ARGUMENT (NULL manager or out_hint, empty tag list, likelihood outside
 *  [0, 1] or NaN), ODR_E_INVALID_TAG (a tag the catalog lacks; nothing is hinted),
 *  ODR_E_CATALOG_UNAVAILABLE (no catalog loaded yet).
 *  Lifetime: the hint keeps its manager alive; end and free it with `odr_hint_end`, once.
 *  odr_shutdown refuses while hints are alive. */
ODR_EXTERN odr_status odr_anticipate(odr_manager *manager, const char *const *tags, size_t tag_count, double likelihood, odr_hint **out_hint);

/** Withdraws the hint at once and frees it (NULL is ignored): prefetches only it wanted are
 *  cancelled (entries already verified stay for a later install); installed packs stay installed.
 *  Like `free`, calling it twice on the same hint is undefined. */
ODR_EXTERN void odr_hint_end(odr_hint *hint);

/** The share, in [0, 1], of recent hinted prefetched bytes that a request later used (1 before any
 *  prefetch was judged): below 0.5 hinted prefetches stop purging to make room, below 0.4 they stop,
 *  until hints prove right again (RUNTIME.md, "Prefetch that learns"). `out_judged_bytes` (may be
 *  NULL) receives the decayed bytes the measure weighs, 0 when none. The measure is kept in the
 *  store: a manager created on it starts from the one the last manager recorded.
 *  Errors: ODR_E_INVALID_ARGUMENT (NULL manager or out_measure). */
ODR_EXTERN odr_status odr_manager_prefetch_measure(odr_manager *manager, double *out_measure, int64_t *out_judged_bytes);

/* ------------------------------------------------------------------------------------------ */
/* Request progress: callback and stalls                                                      */
/* ------------------------------------------------------------------------------------------ */

/**
 * Called with a request's progress as bytes arrive: the values `odr_request_progress` and
 * `odr_request_stalled` would give (`stalled` is 1 while a download waits to retry after a failed
 * connection). Runs on the library's callback thread (see the top of this file).
 */
typedef void (*odr_progress_callback)(int64_t completed_bytes, int64_t total_bytes, int stalled, void *user_data);

/**
 * Calls `callback` with each new progress value of `request`, at most once every
 * `min_interval_ms` milliseconds (0...86400000; 0: every value, which arrive at least every 16 KiB
 * or 100 ms while bytes do), always with the latest value: the value that makes the request
 * usable (completed == total) is never skipped. Values never decrease; each is passed once.
 * Replaces the request's previous progress callback; a NULL `callback` removes it.
 *
 * Lifetime: once `odr_request_end`, `odr_request_cancel`, `odr_request_destroy`, or another call
 * of this function returns, the previous callback has returned and never runs again (so
 * `user_data` may be freed), also when called from inside the callback. End and cancel remove the
 * callback: set it again before beginning the request again.
 */
ODR_EXTERN odr_status odr_request_set_progress_callback(odr_request *request, odr_progress_callback callback, void *user_data, int64_t min_interval_ms);

/**
 * Whether the request's downloads are stalled: a connection failed (or broke off) and the download
 * waits to try again. `*out_stalled` is 1 until the next attempt gets an answer, the request becomes
 * usable or its begin fails (when the attempts run out), else 0; `*out_retry_in_ms` is the
 * milliseconds until the next attempt (0 when it is due), or -1 when not stalled. Each pointer may
 * be NULL. See also ODR_EVENT_DOWNLOAD_RETRYING.
 */
ODR_EXTERN odr_status odr_request_stalled(odr_request *request, int *out_stalled, int64_t *out_retry_in_ms);

/* ------------------------------------------------------------------------------------------ */
/* Resources                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/**
 * Copies the installed file path of `resource` (a path in the asset tree, such as
 * "Levels/Level1/map.json") into `buffer`, NUL-terminated, and sets `*out_needed` (may be NULL) to
 * the bytes the path takes including the NUL.
 *  - ODR_E_BUFFER_TOO_SMALL: `buffer_size` is less than that; `*out_needed` says how much to pass
 *    (`buffer` may be NULL with size 0 to ask).
 *  - ODR_E_RESOURCE_NOT_INSTALLED: the request is not accessing (not begun, downloading, ended).
 *  - ODR_E_UNKNOWN_RESOURCE: the request's tags hold no such resource.
 */
ODR_EXTERN odr_status odr_request_resource_path(odr_request *request, const char *resource, char *buffer, size_t buffer_size, size_t *out_needed);

/* ------------------------------------------------------------------------------------------ */
/* Sharing the store with peers (issue 43)                                                    */
/* ------------------------------------------------------------------------------------------ */

#define ODR_SHARE_OPTIONS_VERSION 1
/** The default port of a share (as `odr share`'s). */
#define ODR_SHARE_DEFAULT_PORT 7420
/** Initializes the share options with the defaults: `odr_share_options o = ODR_SHARE_OPTIONS_INIT;` */
#define ODR_SHARE_OPTIONS_INIT { ODR_SHARE_OPTIONS_VERSION, NULL, ODR_SHARE_DEFAULT_PORT, 4, 2, 33554432, 0 }

/** How to share; initialize with ODR_SHARE_OPTIONS_INIT and change what differs, so fields added
 *  in later versions keep their defaults. */
typedef struct odr_share_options {
    unsigned int version;            /* ODR_SHARE_OPTIONS_VERSION */
    const char *host;                /* the address to listen on; NULL (default): "127.0.0.1", this
                                        device only; "0.0.0.0" shares with the local network */
    int port;                        /* 0...65535; 0 picks a free one (odr_share_port says which);
                                        default ODR_SHARE_DEFAULT_PORT */
    int max_transfers;               /* bodies sent at once, over all peers; more are answered 503
                                        at once; 1...1024, default 4 */
    int max_transfers_per_address;   /* bodies sent at once to one address; 1...1024, default 2 */
    int64_t bytes_per_second;        /* over all transfers; > 0, or -1 for no limit; default
                                        33554432 (32 MiB/s) */
    int announce;                    /* 1: announce the share by DNS-SD (_odr._tcp through Avahi,
                                        with the ids of the store's catalogs), so devices with
                                        ODR_OPT_DISCOVER_PEERS find it; needs a host the LAN
                                        reaches. 0 (default): not announced */
} odr_share_options;

/**
 * Shares the manager's store with peers, in this process: its installed, verified content by
 * SHA-256, read-only over HTTP, what `odr share` serves (docs/STORE.md, "Local network peers").
 * Another device's manager with this share's URL as an ODR_OPT_PEER (or that discovers it) asks it
 * first for each file an install needs. Returns once the port accepts connections. `options` may
 * be NULL for the defaults. The share keeps its manager's store open, also after
 * `odr_manager_destroy`; stop it with `odr_share_stop` and free it with `odr_share_destroy`.
 * Errors: ODR_E_INVALID_ARGUMENT (NULL manager or out_share; options not initialized with
 * ODR_SHARE_OPTIONS_INIT, or a field out of its range), ODR_E_BIND_FAILED (the port is taken or the
 * host is not this machine's: choose another, or port 0), ODR_E_NETWORK_UNAVAILABLE (`announce`
 * and no Avahi on the system bus; nothing is left running).
 */
ODR_EXTERN odr_status odr_manager_start_sharing(odr_manager *manager, const odr_share_options *options, odr_share **out_share);

/** The TCP port the share listens on. ODR_E_SHARE_STOPPED after `odr_share_stop`. */
ODR_EXTERN odr_status odr_share_port(odr_share *share, int *out_port);

/** Copies the share's URL, "http://HOST:PORT/" with the host it listens on, into `buffer`,
 *  NUL-terminated, as `odr_request_resource_path` copies a path (ODR_E_BUFFER_TOO_SMALL with
 *  `*out_needed`; `out_needed` may be NULL). A share on "0.0.0.0" tells peers this device's LAN
 *  address with the port instead. ODR_E_SHARE_STOPPED after `odr_share_stop`. */
ODR_EXTERN odr_status odr_share_url(odr_share *share, char *buffer, size_t buffer_size, size_t *out_needed);

/** Body bytes the share sent since it started, and the transfers under way; each pointer may be
 *  NULL. Works after `odr_share_stop` too (the totals then stay). */
ODR_EXTERN odr_status odr_share_stats(odr_share *share, int64_t *out_bytes_sent, int *out_active_transfers);

/** Stops listening, withdraws the announcement and closes every connection; blocks until the port
 *  is closed (bodies under way get at most a second to end, then every connection is closed, a
 *  peer's that stopped reading mid-body included). Once: a second call is
 *  ODR_E_SHARE_STOPPED. The handle stays valid until `odr_share_destroy`. */
ODR_EXTERN odr_status odr_share_stop(odr_share *share);

/** Stops the share if it still runs (as `odr_share_stop`) and frees it (NULL is ignored). Like
 *  `free`, calling it twice on the same share is undefined. odr_shutdown refuses while a share is
 *  alive. */
ODR_EXTERN void odr_share_destroy(odr_share *share);

/* ------------------------------------------------------------------------------------------ */
/* Network probe, enumeration, shutdown (issue 28)                                            */
/* ------------------------------------------------------------------------------------------ */

/** What a network probe answers. */
typedef enum odr_network_condition {
    ODR_NETWORK_UNMETERED = 0,   /* bytes cost nothing extra, or nobody knows */
    ODR_NETWORK_METERED = 1,     /* a hotspot, a mobile modem, a capped plan: the ODR_OPT_METERED_*
                                    options apply */
    ODR_NETWORK_OFFLINE = 2      /* no network: downloads wait (or fail, see ODR_OPT_POLICY_WAITS) */
} odr_network_condition;

/** Tells the library whether the network is metered. Called on a short-lived library thread, one
 *  call at a time per manager: before the first download, every 30 s while downloads run or wait,
 *  and after a transfer fails. May block briefly; should not call odr functions. */
typedef odr_network_condition (*odr_network_probe)(void *user_data);

/** Sets the network probe of the managers created from `config` (NULL: none; ODR_OPT_NETWORK_METERED
 *  decides). `probe` and `user_data` must stay valid until `odr_manager_destroy` of each such
 *  manager returns; it is never called after that. */
ODR_EXTERN odr_status odr_config_set_network_probe(odr_config *config, odr_network_probe probe, void *user_data);

/** One tag of the catalog. */
typedef struct odr_tag_info {
    const char *name;            /* the tag, NUL-terminated */
    int64_t download_bytes;      /* what a client with nothing installed downloads for it */
    int64_t installed_bytes;     /* what its packs take on disk once installed */
} odr_tag_info;

/** One file a tag holds. */
typedef struct odr_file_info {
    const char *path;            /* its path in the asset tree ("Levels/Level1/map.json"), as
                                    `odr_request_resource_path` takes it */
    int64_t bytes;               /* its size once installed */
} odr_file_info;

/** The tags of the catalog version requests use now, in the catalog's order, with the sizes of the
 *  packs this device downloads for each (its ODR_OPT_VARIANT choice). `*out_tags` is one block the
 *  library allocates, strings included: free it with `odr_free` (also when `*out_count` is 0).
 *  ODR_E_CATALOG_UNAVAILABLE before any catalog. */
ODR_EXTERN odr_status odr_manager_tags(odr_manager *manager, odr_tag_info **out_tags, size_t *out_count);

/** The files a request for `tag` holds, sorted by path (for a file with variants, the one this
 *  device gets). One block, freed with `odr_free`, as for `odr_manager_tags`. ODR_E_INVALID_TAG for
 *  a tag the catalog does not define. */
ODR_EXTERN odr_status odr_manager_tag_files(odr_manager *manager, const char *tag, odr_file_info **out_files, size_t *out_count);

/** Frees what `odr_manager_tags` or `odr_manager_tag_files` returned (NULL is ignored). */
ODR_EXTERN void odr_free(void *list);

/** Stops the library's threads once every manager and request is destroyed: waits (at most
 *  `timeout_ms`, negative: no limit) until each manager's transfer thread and every probe thread
 *  has exited and every callback has returned. ODR_E_INVALID_ARGUMENT, changing nothing, while a
 *  manager, request, hint or share is alive; ODR_E_WAIT_TIMEOUT when the time passes first (call it again). The
 *  library may be used again afterwards. libdispatch's worker threads, which Swift shares with the
 *  whole process, run no library code by then and end by themselves after a few idle seconds.
 *  After a share has run, SwiftNIO's event-loop threads and blocking-I/O pool (process-wide
 *  singletons, started by the first share) stay, idle, for the life of the process. */
ODR_EXTERN odr_status odr_shutdown(int64_t timeout_ms);

#endif /* ODR_H */
