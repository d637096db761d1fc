/*
 * odr_manager_describe, checked from C against a split catalog (odrpack build's default):
 * a tag no request used yet has no download size until it is described; describing it fetches its
 * metadata, after which the size is known, and only that tag is described.
 *
 *   describe_checks CATALOG-URL STORE-DIRECTORY
 *
 * Run by CAPIContractTests against CatalogFixture.game() built split, served with 300 ms of latency
 * a request (so a 50 ms timeout passes first). Prints one line per check ("ok <name>" or
 * "FAIL <name>: ..."), "download-size big <bytes>", then "checks: <n> failed: <m>"; exits 1 if any
 * failed.
 */
#include <odr.h>

#include <stdio.h>
#include <stdlib.h>

#include "checks.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CATALOG-URL STORE-DIRECTORY\n", argv[0]);
        return 2;
    }
    odr_manager *manager = checks_manager(argv[1], argv[2]);
    if (!manager) return 1;

    const char *const big[] = { "big" };
    const char *const small[] = { "small" };
    const char *const unknown[] = { "no-such-tag" };
    int64_t bytes = -1;
    EXPECT(odr_manager_describe(manager, big, 1, 60000), ODR_E_CATALOG_UNAVAILABLE, "describe before prepare");
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare");

    EXPECT(odr_manager_describe(NULL, big, 1, 60000), ODR_E_INVALID_ARGUMENT, "describe with a NULL manager");
    EXPECT(odr_manager_describe(manager, NULL, 1, 60000), ODR_E_INVALID_ARGUMENT, "describe a NULL tag list");
    EXPECT(odr_manager_describe(manager, big, 0, 60000), ODR_E_INVALID_ARGUMENT, "describe an empty tag list");
    EXPECT(odr_manager_describe(manager, unknown, 1, 60000), ODR_E_INVALID_TAG, "describe an unknown tag");

    EXPECT(odr_manager_download_size(manager, big, 1, &bytes), ODR_E_CATALOG_UNAVAILABLE, "an undescribed tag has no size yet");
    TRUE_THAT(bytes == -1, "a failed size leaves its out-parameter untouched");
    EXPECT(odr_manager_describe(manager, big, 1, 50), ODR_E_WAIT_TIMEOUT, "a describe whose timeout passes first");
    EXPECT(odr_manager_describe(manager, big, 1, 60000), ODR_OK, "describe big after the timeout");
    EXPECT(odr_manager_download_size(manager, big, 1, &bytes), ODR_OK, "the size of a described tag");
    printf("download-size big %lld\n", (long long)bytes);
    EXPECT(odr_manager_describe(manager, big, 1, 60000), ODR_OK, "describe a described tag again");
    EXPECT(odr_manager_download_size(manager, small, 1, &bytes), ODR_E_CATALOG_UNAVAILABLE, "a tag not asked for stays undescribed");
    EXPECT(odr_manager_set_preservation_priority(manager, small, 1, 0.5), ODR_E_CATALOG_UNAVAILABLE, "no priority for an undescribed tag");
    EXPECT(odr_manager_describe(manager, small, 1, -1), ODR_OK, "describe small with no timeout");
    EXPECT(odr_manager_set_preservation_priority(manager, small, 1, 0.5), ODR_OK, "a priority once described");

    odr_manager_destroy(manager);
    printf("checks: %d failed: %d\n", checks, failures);
    return failures ? 1 : 0;
}
