/* fuzz_state - the hook's OCI state parser (rv_hook_parse_state: the JSON a
 * runtime writes on the hook's stdin). Invariants: a failure has a message;
 * a success has a container id that is a safe file name, a positive pid, an
 * absolute bundle path, all terminated; the same text parses the same way twice. */
#include "fuzz.h"
#include "resview/hook.h"
#include "resview/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rv_hook_state st, again;
    struct rv_error err = { 0 };

    if (rv_hook_parse_state((const char *)data, size, &st, &err) < 0) {
        FUZZ_CHECK(err.msg[0] && FUZZ_TERMINATED(err.msg), "failure without a message");
        return 0;
    }
    FUZZ_CHECK(FUZZ_TERMINATED(st.id) && FUZZ_TERMINATED(st.bundle), "unterminated field");
    FUZZ_CHECK(rv_safe_name(st.id), "unsafe container id `%s`", st.id);
    FUZZ_CHECK(st.pid > 0, "pid %d", (int)st.pid);
    FUZZ_CHECK(st.bundle[0] == '/', "relative bundle `%s`", st.bundle);
    FUZZ_CHECK(rv_hook_parse_state((const char *)data, size, &again, &err) == 0 &&
               memcmp(&st, &again, sizeof(st)) == 0, "a second parse differs");
    return 0;
}
