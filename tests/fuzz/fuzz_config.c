/* fuzz_config - the configuration parser (rv_config_parse) over the defaults.
 * Invariants: counts stay within their arrays, every string is terminated,
 * enums hold a named value, and a parse never fails on a JSON object (key-level
 * problems are warnings). */
#include "fuzz.h"
#include "resview/config.h"
#include "resview/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rv_config cfg;
    struct rv_error err = { 0 };
    json_t *probe = NULL;
    int r;

    rv_config_defaults(&cfg);
    r = rv_config_parse(&cfg, (const char *)data, size, &err);
    if (r < 0) {
        FUZZ_CHECK(err.msg[0] != '\0' && FUZZ_TERMINATED(err.msg), "failure without a message");
        /* a JSON object must never be refused */
        if (rv_json_parse((const char *)data, size, "probe", &probe, &err) == 0) {
            FUZZ_CHECK(!json_is_object(probe), "a JSON object was refused: %s", err.msg);
            json_decref(probe);
        }
        return 0;
    }
    FUZZ_CHECK(cfg.n_runtimes >= 1 && cfg.n_runtimes <= RV_MAX_RUNTIMES, "n_runtimes %d", cfg.n_runtimes);
    for (int i = 0; i < cfg.n_runtimes; i++)
        FUZZ_CHECK(FUZZ_TERMINATED(cfg.runtimes[i]) && cfg.runtimes[i][0], "runtime %d", i);
    FUZZ_CHECK(cfg.n_vars >= 0 && cfg.n_vars <= RV_MAX_VARS, "n_vars %d", cfg.n_vars);
    for (int i = 0; i < cfg.n_vars; i++) {
        FUZZ_CHECK(FUZZ_TERMINATED(cfg.vars[i].name) && cfg.vars[i].name[0], "var %d name", i);
        FUZZ_CHECK(cfg.vars[i].source <= RV_SRC_GPUS, "var %d source", i);
        FUZZ_CHECK(strcmp(cfg.vars[i].name, "SLURM_JOB_ID") != 0, "SLURM_JOB_ID configured");
        FUZZ_CHECK(!strstr(cfg.vars[i].name, "NODELIST"), "a NODELIST variable configured");
    }
    FUZZ_CHECK(cfg.n_warnings >= 0 && cfg.n_warnings <= RV_MAX_WARNINGS, "n_warnings %d", cfg.n_warnings);
    for (int i = 0; i < cfg.n_warnings; i++)
        FUZZ_CHECK(FUZZ_TERMINATED(cfg.warnings[i]), "warning %d", i);
    FUZZ_CHECK(FUZZ_TERMINATED(cfg.log_file) && FUZZ_TERMINATED(cfg.hook_path) &&
               FUZZ_TERMINATED(cfg.hook_stage) && FUZZ_TERMINATED(cfg.lxcfs_root) &&
               FUZZ_TERMINATED(cfg.state_dir),
               "an unterminated string");
    FUZZ_CHECK(cfg.hook_path[0] == '/', "hook.path not absolute: %s", cfg.hook_path);
    FUZZ_CHECK(strcmp(cfg.hook_stage, "prestart") == 0 || strcmp(cfg.hook_stage, "createRuntime") == 0,
               "hook.stage %s", cfg.hook_stage);
    FUZZ_CHECK(cfg.log_level <= RV_DEBUG && cfg.rounding <= RV_ROUND_NEAREST, "enum out of range");
    (void)rv_level_name(cfg.log_level);
    return 0;
}
