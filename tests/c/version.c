/* The loaded library and the header agree on versions, and the status names are right. */
#include <stdio.h>
#include <string.h>

#include "common.h"

int main(void) {
    CHECK(strcmp(panto_version(), PANTO_VERSION) == 0, "library %s, header %s", panto_version(), PANTO_VERSION);
    char numeric[64];
    snprintf(numeric, sizeof numeric, "%d.%d.%d", PANTO_VERSION_MAJOR, PANTO_VERSION_MINOR, PANTO_VERSION_PATCH);
    CHECK(strncmp(PANTO_VERSION, numeric, strlen(numeric)) == 0, "%s does not start with %s", PANTO_VERSION,
          numeric);
    CHECK(panto_abi_version() == PANTO_ABI_VERSION, "library ABI %u, header ABI %u", panto_abi_version(),
          (unsigned)PANTO_ABI_VERSION);
    CHECK(strcmp(panto_status_name(PANTO_ERR_UTF8), "PANTO_ERR_UTF8") == 0, "%s",
          panto_status_name(PANTO_ERR_UTF8));
    CHECK(strcmp(panto_status_name(12345), "PANTO_UNKNOWN") == 0, "%s", panto_status_name(12345));
    printf("version ok: %s (ABI %u)\n", panto_version(), panto_abi_version());
    return 0;
}
