/* The environments of an enroot hook: ENROOT_ENVIRON read as enroot reads it,
 * the job's environment, requests from both, and what is appended. */
#define _GNU_SOURCE
#include "lxcfs/enroot_env.h"
#include "resview/spec.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

static json_t *parse(const char *text)
{
    json_t *env = NULL;
    struct rv_error err;
    if (rv_enroot_environ_parse(text, strlen(text), &env, &err) < 0)
        abort();
    return env;
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

int main(void)
{
    struct rv_error err;
    json_t *env, *job;

    /* envfmt: blanks, comments, invalid names, ENROOT_*, quotes; last wins */
    env = parse("PATH=/usr/bin\n  OMP_NUM_THREADS=4\n# GOMAXPROCS=9\n\n1BAD=x\nBAD-NAME=y\n"
                "ENROOT_ROOTFS=/x\nNOEQUALS\nQ1=\"quoted value\"  \nQ2='single'\nQ3=\"\nQ4=\"\"\n"
                "OMP_NUM_THREADS=7\nEMPTY=\nLAST=a\"\n");
    ok_str(rv_env_get(env, "PATH"), "/usr/bin", "a plain line");
    ok_str(rv_env_get(env, "OMP_NUM_THREADS"), "7", "leading blanks dropped; the last line of a name wins");
    ok(rv_env_get(env, "GOMAXPROCS") == NULL, "a comment is not a variable");
    ok(rv_env_get(env, "1BAD") == NULL && rv_env_get(env, "BAD-NAME") == NULL && rv_env_get(env, "NOEQUALS") == NULL,
       "invalid names and lines without = are dropped");
    ok(rv_env_get(env, "ENROOT_ROOTFS") == NULL, "ENROOT_* is enroot's own, dropped");
    ok_str(rv_env_get(env, "Q1"), "quoted value", "surrounding double quotes (and trailing blanks) taken off");
    ok_str(rv_env_get(env, "Q2"), "single", "surrounding single quotes taken off");
    ok_str(rv_env_get(env, "Q3"), "\"", "a lone quote is kept");
    ok_str(rv_env_get(env, "Q4"), "", "\"\" is empty");
    ok_str(rv_env_get(env, "EMPTY"), "", "an empty value is set");
    ok_str(rv_env_get(env, "LAST"), "a\"", "a quote at one end only is kept");
    ok(json_array_size(env) == 8, "one entry per name (%zu)", json_array_size(env));
    json_decref(env);

    /* the job's environment: the hook's own */
    char *envp[] = { "SLURM_JOB_ID=42", "GOMAXPROCS=3", "junk", NULL };
    job = rv_enroot_job_env(envp);
    ok(job && json_array_size(job) == 2 && rv_env_get(job, "SLURM_JOB_ID"), "the job's environment, K=V only");

    /* requests: an opt-out in either wins; invalid values are errors */
    env = parse("RESVIEW_ENV=1\n");
    ok(rv_enroot_request(job, env, "RESVIEW_ENV", &err) == 1, "the container opts in, the job says nothing");
    ok(rv_enroot_request(job, env, "RESVIEW_LXCFS", &err) == -1, "neither sets it");
    json_array_append_new(job, json_string("RESVIEW_ENV=0"));
    ok(rv_enroot_request(job, env, "RESVIEW_ENV", &err) == 0, "the job's opt-out beats the image's opt-in");
    json_decref(env);
    env = parse("RESVIEW_LXCFS=0\n");
    ok(rv_enroot_request(job, env, "RESVIEW_LXCFS", &err) == 0, "the image's opt-out counts too");
    json_decref(env);
    env = parse("RESVIEW_LXCFS=maybe\n");
    ok(rv_enroot_request(job, env, "RESVIEW_LXCFS", &err) == -2 && strstr(err.msg, "RESVIEW_LXCFS") &&
       strstr(err.msg, "ENROOT_ENVIRON"), "an invalid value is an error naming where: %s", err.msg);
    json_decref(env);
    json_array_append_new(job, json_string("RESVIEW_LXCFS=yes"));
    env = parse("");
    ok(rv_enroot_request(job, env, "RESVIEW_LXCFS", &err) == -2 && strstr(err.msg, "job"),
       "... in the job's environment too: %s", err.msg);
    json_decref(env);
    json_decref(job);

    /* append: only what is planned and not set anywhere; a missing newline first */
    {
        char path[] = "/tmp/resview-unit-enroot.XXXXXX";
        int fd = mkstemp(path);
        struct rv_env_plan plan = { .n = 3 };
        unsigned added;
        if (fd < 0 || write(fd, "FROM_A_HOOK=1", 13) != 13)
            abort();
        close(fd);
        snprintf(plan.items[0].name, sizeof(plan.items[0].name), "GOMAXPROCS");
        snprintf(plan.items[0].value, sizeof(plan.items[0].value), "2");
        snprintf(plan.items[1].name, sizeof(plan.items[1].name), "OMP_NUM_THREADS");
        snprintf(plan.items[1].value, sizeof(plan.items[1].value), "2");
        snprintf(plan.items[2].name, sizeof(plan.items[2].name), "SLURM_CPUS_ON_NODE");
        plan.items[2].status = RV_VAR_SLURM_JOB;
        json_t *have = parse("GOMAXPROCS=3\n");
        ok(rv_enroot_append(path, &plan, have, &added, &err) == 0 && added == 1, "one variable appended");
        ok_str(slurp(path), "FROM_A_HOOK=1\nOMP_NUM_THREADS=2\n", "after a newline of its own, nothing set twice");
        json_decref(have);
        unlink(path);
        have = json_array();
        ok(rv_enroot_append(path, &plan, have, &added, &err) < 0, "a missing ENROOT_ENVIRON is an error");
        json_decref(have);
    }
    return unit_done();
}
