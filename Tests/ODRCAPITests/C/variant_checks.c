/*
 * ODR_OPT_VARIANT, checked from C: a game that chooses 2x and ETC2 gets the 2x file of a path with
 * variants, and no file for a path that exists only at 1x.
 *
 *   variant_checks CATALOG-URL STORE-DIRECTORY TREE-2X-SOURCE
 *
 * Run by CAPIContractTests against CatalogFixture.variantGame(). Prints one line per check
 * ("ok <name>" or "FAIL <name>: ..."), then "checks: <n> failed: <m>"; exits 1 if any failed.
 */
#include <odr.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

/* The bytes of the file at `path`, or NULL; `*size` is set to their count. */
static char *read_all(const char *path, long *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    char *bytes = NULL;
    if (fseek(file, 0, SEEK_END) == 0 && (*size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
        bytes = malloc((size_t)*size + 1);
        if (bytes && fread(bytes, 1, (size_t)*size, file) != (size_t)*size) {
            free(bytes);
            bytes = NULL;
        }
    }
    fclose(file);
    return bytes;
}

static int same_contents(const char *a, const char *b) {
    long size_a = -1, size_b = -2;
    char *bytes_a = read_all(a, &size_a), *bytes_b = read_all(b, &size_b);
    int same = bytes_a && bytes_b && size_a == size_b && memcmp(bytes_a, bytes_b, (size_t)size_a) == 0;
    free(bytes_a);
    free(bytes_b);
    return same;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s CATALOG-URL STORE-DIRECTORY TREE-2X-SOURCE\n", argv[0]);
        return 2;
    }
    odr_config *config = checks_config(argv[1], argv[2]);
    odr_manager *manager = NULL;
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution=1x"), ODR_OK, "choose 1x");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "resolution=2x"), ODR_OK, "choose 2x instead (replaces 1x)");
    EXPECT(odr_config_set_string(config, ODR_OPT_VARIANT, "texture=etc2"), ODR_OK, "choose ETC2 textures");
    EXPECT(odr_manager_create(config, &manager), ODR_OK, "create the manager");
    odr_config_free(config);
    if (!manager) return 1;
    EXPECT(odr_manager_prepare(manager, 1, 60000), ODR_OK, "prepare");

    const char *const tags[] = { "forest" };
    int64_t download = 0;
    EXPECT(odr_manager_download_size(manager, tags, 1, &download), ODR_OK, "the download size of forest");
    printf("download-size %lld\n", (long long)download);

    odr_request *request = NULL;
    EXPECT(odr_request_create(manager, tags, 1, &request), ODR_OK, "create a request for forest");
    EXPECT(odr_request_begin_wait(request, 60000), ODR_OK, "begin forest");
    char path[4096];
    size_t needed = 0;
    EXPECT(odr_request_resource_path(request, "Forest/tree.png", path, sizeof path, &needed), ODR_OK, "the path of Forest/tree.png");
    TRUE_THAT(same_contents(path, argv[3]), "Forest/tree.png is the 2x file");
    EXPECT(odr_request_resource_path(request, "Forest/sky.png", path, sizeof path, &needed), ODR_E_UNKNOWN_RESOURCE,
           "Forest/sky.png, only at 1x, is not there for a 2x device");
    TRUE_THAT(strstr(odr_error_message(), "ODR_OPT_VARIANT") != NULL, "the message mentions the variant choice");
    EXPECT(odr_request_end(request), ODR_OK, "end forest");
    odr_request_destroy(request);
    odr_manager_destroy(manager);

    printf("checks: %d failed: %d\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
