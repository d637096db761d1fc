/*
 * A game that shares its store with peers, from C: odr_manager_start_sharing and the rest of the
 * odr_share functions, every bad argument they refuse, the discovery options, and a second manager
 * that installs from the share.
 *
 *   share_checks CDN-A-URL CDN-B-URL STORE-A STORE-B
 *
 * Run by CShareTests against the sample game served twice on loopback: manager A installs tutorial
 * and level1-3 from CDN A and shares its store; manager B, with the share as its peer, installs the
 * same tags, so CDN B (whose request log the test reads) should send no pack bytes. Prints one line
 * per check ("ok <name>" or "FAIL <name>: ..."), "share <url>", "path <file>" and "share-sent
 * <bytes>" lines, then "checks: <n> failed: <m>"; exits 1 if any failed.
 */
#define _POSIX_C_SOURCE 200809L
#include <odr.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checks.h"

/* A socket connected to 127.0.0.1:port, or -1 when the connection is refused. */
static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The HTTP status the share at `port` answers a GET of `path` with, or -1 without an answer. */
static int http_status(int port, const char *path) {
    int fd = connect_to(port);
    if (fd < 0) return -1;
    char request[512], answer[64] = "";
    int length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    int status = -1;
    if (write(fd, request, (size_t)length) == length) {
        ssize_t got = read(fd, answer, sizeof answer - 1);
        if (got > 0 && sscanf(answer, "HTTP/1.1 %d", &status) != 1) status = -1;
    }
    close(fd);
    return status;
}

/* A digest nobody installed: the share answers 404 after looking it up in the store. */
static const char *absent = "/odr/v1/sha256/0000000000000000000000000000000000000000000000000000000000000000";

#define REFUSED(field, value, name) do { \
        odr_share_options bad_ = ODR_SHARE_OPTIONS_INIT; \
        bad_.field = (value); \
        EXPECT(odr_manager_start_sharing(a, &bad_, &share), ODR_E_INVALID_ARGUMENT, (name)); \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: share_checks CDN-A-URL CDN-B-URL STORE-A STORE-B\n");
        return 2;
    }
    const char *cdn_a = argv[1], *cdn_b = argv[2], *store_a = argv[3], *store_b = argv[4];
    const char *tags[] = { "level1", "level2", "level3" };

    /* The discovery options, on the manager that shares (no Avahi here: installs go on without it). */
    odr_config *config = checks_config(cdn_a, store_a);
    EXPECT(odr_config_set_int(config, ODR_OPT_DISCOVER_PEERS, 2), ODR_E_INVALID_ARGUMENT, "discovering peers is 0 or 1");
    EXPECT(odr_config_set_int(config, ODR_OPT_DISCOVER_PEERS, -1), ODR_E_INVALID_ARGUMENT, "discovering peers is not -1");
    EXPECT(odr_config_set_string(config, ODR_OPT_DISCOVER_PEERS, "1"), ODR_E_INVALID_ARGUMENT, "discovering peers is a number option");
    EXPECT(odr_config_set_int(config, ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 99), ODR_E_INVALID_ARGUMENT, "a discovery timeout under 100 ms");
    EXPECT(odr_config_set_int(config, ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 60001), ODR_E_INVALID_ARGUMENT, "a discovery timeout over a minute");
    EXPECT(odr_config_set_int(config, ODR_OPT_DISCOVER_PEERS, 1), ODR_OK, "discovering peers on");
    EXPECT(odr_config_set_int(config, ODR_OPT_PEER_DISCOVERY_TIMEOUT_MS, 200), ODR_OK, "a discovery timeout of 200 ms");
    odr_manager *a = NULL;
    EXPECT(odr_manager_create(config, &a), ODR_OK, "create the manager that shares");
    odr_config_free(config);
    if (!a) return 1;
    EXPECT(odr_manager_prepare(a, 1, 120000), ODR_OK, "prepare the manager that shares");
    odr_request *request = NULL;
    EXPECT(odr_request_create(a, tags, 3, &request), ODR_OK, "a request for level1-3");
    EXPECT(odr_request_begin_wait(request, 120000), ODR_OK, "the manager that shares installs level1-3 from its CDN");
    odr_request_destroy(request);   /* the packs stay installed, and shared */

    /* Bad arguments: each refused with a code, nothing started. */
    odr_share *share = NULL;
    EXPECT(odr_manager_start_sharing(NULL, NULL, &share), ODR_E_INVALID_ARGUMENT, "sharing a NULL manager");
    EXPECT(odr_manager_start_sharing(a, NULL, NULL), ODR_E_INVALID_ARGUMENT, "sharing with a NULL out_share");
    REFUSED(version, 0, "options not initialized with ODR_SHARE_OPTIONS_INIT");
    REFUSED(version, ODR_SHARE_OPTIONS_VERSION + 1, "options of a newer header");
    REFUSED(port, -1, "a negative port");
    REFUSED(port, 65536, "a port above 65535");
    REFUSED(max_transfers, 0, "zero transfers at once");
    REFUSED(max_transfers, 1025, "more than 1024 transfers at once");
    REFUSED(max_transfers_per_address, 0, "zero transfers per address");
    REFUSED(bytes_per_second, 0, "a rate of zero bytes per second");
    REFUSED(bytes_per_second, -2, "a negative rate other than -1");
    REFUSED(announce, 2, "announce neither 0 nor 1");
    REFUSED(host, "", "an empty host");
    REFUSED(host, "\xff\xfe", "a host that is not UTF-8");
    TRUE_THAT(share == NULL, "a refused start leaves out_share untouched");

    /* Sharing on any free port. */
    odr_share_options options = ODR_SHARE_OPTIONS_INIT;
    options.port = 0;
    EXPECT(odr_manager_start_sharing(a, &options, &share), ODR_OK, "share the store on any free port");
    if (!share) return 1;
    int port = 0;
    EXPECT(odr_share_port(share, &port), ODR_OK, "the share's port");
    TRUE_THAT(port > 0 && port <= 65535, "the share picked a port");
    size_t needed = 0;
    EXPECT(odr_share_url(share, NULL, 0, &needed), ODR_E_BUFFER_TOO_SMALL, "asking the URL's size");
    char url[128], expected[64];
    EXPECT(odr_share_url(share, url, sizeof url, NULL), ODR_OK, "the share's URL");
    snprintf(expected, sizeof expected, "http://127.0.0.1:%d/", port);
    TRUE_THAT(strcmp(url, expected) == 0 && needed == strlen(expected) + 1, "the URL names the host and the port");
    printf("share %s\n", url);
    TRUE_THAT(http_status(port, absent) == 404, "the share answers from the store");
    TRUE_THAT(http_status(port, "/catalog.json") == 404, "the share serves nothing but digests");

    odr_share *second = NULL;
    options.port = port;
    EXPECT(odr_manager_start_sharing(a, &options, &second), ODR_E_BIND_FAILED, "a port another share holds");
    options.host = "203.0.113.1";   /* TEST-NET-3: no interface of this machine has it */
    options.port = 0;
    EXPECT(odr_manager_start_sharing(a, &options, &second), ODR_E_BIND_FAILED, "a host this machine does not have");
    TRUE_THAT(second == NULL, "a failed start leaves out_share untouched");
    EXPECT(odr_share_port(NULL, &port), ODR_E_INVALID_ARGUMENT, "the port of a NULL share");
    EXPECT(odr_share_port(share, NULL), ODR_E_INVALID_ARGUMENT, "a NULL out_port");
    EXPECT(odr_share_url(NULL, url, sizeof url, NULL), ODR_E_INVALID_ARGUMENT, "the URL of a NULL share");
    EXPECT(odr_share_stats(NULL, NULL, NULL), ODR_E_INVALID_ARGUMENT, "the figures of a NULL share");
    EXPECT(odr_share_stop(NULL), ODR_E_INVALID_ARGUMENT, "stopping a NULL share");

    /* A second manager, with the share as its peer, installs the same tags. */
    config = checks_config(cdn_b, store_b);
    EXPECT(odr_config_set_string(config, ODR_OPT_PEER, url), ODR_OK, "the share as a peer");
    /* A busy machine can hold the share's first byte past the default deadline (0.1 s) and its
     * hedge (half of it), which send entries to CDN B: what this checks is that the share serves. */
    EXPECT(odr_config_set_int(config, ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS, 10000), ODR_OK, "a peer deadline of 10 s");
    odr_manager *b = NULL;
    EXPECT(odr_manager_create(config, &b), ODR_OK, "create the manager that installs from the share");
    odr_config_free(config);
    if (!b) return 1;
    EXPECT(odr_manager_prepare(b, 1, 120000), ODR_OK, "prepare the manager that installs from the share");
    EXPECT(odr_request_create(b, tags, 3, &request), ODR_OK, "a second request for level1-3");
    EXPECT(odr_request_begin_wait(request, 120000), ODR_OK, "the second manager installs level1-3");
    odr_request_state state = ODR_REQUEST_INITIAL;
    EXPECT(odr_request_state_get(request, &state), ODR_OK, "the second request's state");
    TRUE_THAT(state == ODR_REQUEST_ACCESSING, "the second request is accessing");
    char path[4096];
    EXPECT(odr_request_resource_path(request, "Levels/Level3/map.json", path, sizeof path, NULL), ODR_OK, "level3's map from the share");
    printf("path %s\n", path);
    odr_request_destroy(request);
    int64_t sent = 0;
    int active = -1;
    EXPECT(odr_share_stats(share, &sent, &active), ODR_OK, "the share's figures");
    printf("share-sent %lld\n", (long long)sent);
    TRUE_THAT(sent > 0, "the share sent bytes");
    TRUE_THAT(active >= 0, "the share counts its transfers");

    /* Stopping: once, then every call but odr_share_stats and odr_share_destroy says it stopped. */
    EXPECT(odr_share_stop(share), ODR_OK, "stop the share");
    int refused = connect_to(port);
    TRUE_THAT(refused < 0, "a stopped share refuses connections");
    if (refused >= 0) close(refused);
    EXPECT(odr_share_stop(share), ODR_E_SHARE_STOPPED, "stopping a share twice");
    EXPECT(odr_share_port(share, &port), ODR_E_SHARE_STOPPED, "the port of a stopped share");
    EXPECT(odr_share_url(share, url, sizeof url, NULL), ODR_E_SHARE_STOPPED, "the URL of a stopped share");
    int64_t after = -1;
    EXPECT(odr_share_stats(share, &after, NULL), ODR_OK, "a stopped share's figures");
    TRUE_THAT(after == sent, "a stopped share keeps its figures");
    odr_share_destroy(share);
    odr_share_destroy(NULL);

    /* A share outlives its manager's handle, and holds up odr_shutdown until it is destroyed. */
    options = (odr_share_options)ODR_SHARE_OPTIONS_INIT;
    options.port = 0;
    options.bytes_per_second = -1;
    EXPECT(odr_manager_start_sharing(a, &options, &share), ODR_OK, "share again, with no rate limit");
    EXPECT(odr_share_port(share, &port), ODR_OK, "the new share's port");
    odr_manager_destroy(a);
    odr_manager_destroy(b);
    TRUE_THAT(http_status(port, absent) == 404, "the share answers after odr_manager_destroy");
    EXPECT(odr_shutdown(1000), ODR_E_INVALID_ARGUMENT, "odr_shutdown while a share is alive");
    TRUE_THAT(strstr(odr_error_message(), "odr_share_destroy") != NULL, "odr_shutdown's message names odr_share_destroy");
    EXPECT(odr_share_stop(share), ODR_OK, "stop a share after its manager was destroyed");
    odr_share_destroy(share);
    share = NULL;
    /* Destroying a share that runs stops it. */
    config = checks_config(cdn_a, store_a);
    EXPECT(odr_manager_create(config, &a), ODR_OK, "open the store again");
    odr_config_free(config);
    EXPECT(odr_manager_start_sharing(a, &options, &share), ODR_OK, "share once more");
    EXPECT(odr_share_port(share, &port), ODR_OK, "that share's port");
    odr_share_destroy(share);
    refused = connect_to(port);
    TRUE_THAT(refused < 0, "odr_share_destroy stops a share that runs");
    if (refused >= 0) close(refused);
    odr_manager_destroy(a);
    EXPECT(odr_shutdown(60000), ODR_OK, "odr_shutdown once every share is destroyed");

    printf("checks: %d failed: %d\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
