/* enroot_env.c - the job's and the container's environments of an enroot hook. */
#define _GNU_SOURCE
#include "enroot_env.h"
#include "resview/spec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define ENVIRON_MAX (1u << 20)

static bool alpha_(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static bool alnum_(char c) { return alpha_(c) || (c >= '0' && c <= '9'); }
static bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static bool quote(char c) { return c == '"' || c == '\''; }

/* Set name=value in env (replacing an earlier value of that name). */
static int env_set(json_t *env, const char *name, size_t nlen, const char *value, size_t vlen,
                   struct rv_error *err)
{
    cleanup_free char *kv = NULL;
    size_t i;
    json_t *e;

    if (asprintf(&kv, "%.*s=%.*s", (int)nlen, name, (int)vlen, value) < 0)
        return rv_fail(err, ENOMEM, "environment");
    json_array_foreach(env, i, e) {
        const char *s = json_string_value(e);
        if (s && strncmp(s, kv, nlen + 1) == 0)
            return json_array_set_new(env, i, json_string(kv)) < 0 ? rv_fail(err, ENOMEM, "environment") : 0;
    }
    return json_array_append_new(env, json_string(kv)) < 0 ? rv_fail(err, ENOMEM, "environment") : 0;
}

/* One line as enroot's envfmt leaves it and enroot-switchroot then takes it:
 * leading blanks dropped; comments, empty lines, lines without a valid
 * NAME= and ENROOT_* dropped; one pair of surrounding quotes (either kind,
 * trailing blanks after it allowed) taken off the value. */
static int environ_line(json_t *env, const char *line, size_t n, struct rv_error *err)
{
    size_t k = 0, name;

    while (k < n && space(line[k]))
        k++;
    line += k;
    n -= k;
    if (n == 0 || !alpha_(line[0]))
        return 0;
    for (name = 1; name < n && alnum_(line[name]); name++)
        ;
    if (name == n || line[name] != '=' || (name >= 7 && strncmp(line, "ENROOT_", 7) == 0))
        return 0;
    const char *v = line + name + 1;
    size_t vlen = n - name - 1, end = vlen;
    while (end > 0 && space(v[end - 1]))
        end--;
    if (end >= 2 && quote(v[0]) && quote(v[end - 1])) {
        v++;
        vlen = end - 2;
    }
    return env_set(env, line, name, v, vlen, err);
}

int rv_enroot_environ_parse(const char *text, size_t len, json_t **env, struct rv_error *err)
{
    cleanup_json json_t *out = json_array();

    if (!out)
        return rv_fail(err, ENOMEM, "environment");
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(text + p, '\n', len - p);
        size_t n = nl ? (size_t)(nl - (text + p)) : len - p;
        /* a NUL ends what switchroot's C strings see of a line */
        const char *nul = memchr(text + p, '\0', n);
        if (environ_line(out, text + p, nul ? (size_t)(nul - (text + p)) : n, err) < 0)
            return -1;
        p += n + 1;
    }
    *env = move_ptr(out);
    return 0;
}

int rv_enroot_environ_read(const char *path, json_t **env, struct rv_error *err)
{
    cleanup_free char *text = NULL;
    size_t len;

    if (rv_read_file_at(AT_FDCWD, path, ENVIRON_MAX, &text, &len, NULL, err) < 0)
        return -1;
    return rv_enroot_environ_parse(text, len, env, err);
}

json_t *rv_enroot_job_env(char *const *envp)
{
    json_t *env = json_array();

    for (size_t i = 0; env && envp && envp[i]; i++)
        if (strchr(envp[i], '=') && json_array_append_new(env, json_string(envp[i])) < 0) {
            json_decref(env);
            return NULL;
        }
    return env;
}

static int request_in(json_t *env, const char *var, const char *where, struct rv_error *err)
{
    cleanup_json json_t *spec = json_pack("{s:{s:O}}", "process", "env", env);
    int r;

    if (!spec) {
        rv_fail(err, ENOMEM, "environment");
        return -2;
    }
    r = rv_spec_request(spec, "", var, err);
    if (r == -2)
        rv_wrap(err, "%s", where);
    return r;
}

int rv_enroot_request(json_t *job, json_t *container, const char *var, struct rv_error *err)
{
    int j = request_in(job, var, "the job's environment", err);
    int c = j == -2 ? -2 : request_in(container, var, "the container's environment (ENROOT_ENVIRON)", err);

    if (j == -2 || c == -2)
        return -2;
    if (j == 0 || c == 0)
        return 0;
    return j == 1 || c == 1 ? 1 : -1;
}

int rv_enroot_append(const char *path, const struct rv_env_plan *plan, json_t *have,
                     unsigned *added, struct rv_error *err)
{
    char buf[RV_MAX_VARS * 96] = "";
    size_t off = 0;
    cleanup_close int fd = -1;

    *added = 0;
    for (int i = 0; i < plan->n; i++) {
        int n;
        if (plan->items[i].status != RV_VAR_INJECT || rv_env_get(have, plan->items[i].name))
            continue;
        n = snprintf(buf + off, sizeof(buf) - off, "%s=%s\n", plan->items[i].name,
                     plan->items[i].value);
        if (n < 0 || (size_t)n >= sizeof(buf) - off)
            return rv_fail(err, ENAMETOOLONG, "variables for `%s`", path);
        off += (size_t)n;
        (*added)++;
    }
    if (off == 0)
        return 0;
    fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0)
        return rv_fail(err, errno, "open `%s`", path);
    /* an earlier hook's last line without its newline must not swallow ours */
    struct stat st;
    char last = '\n';
    if (fstat(fd, &st) == 0 && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) == 1 &&
        last != '\n' && write(fd, "\n", 1) != 1)
        return rv_fail(err, errno, "append to `%s`", path);
    if (write(fd, buf, off) != (ssize_t)off)
        return rv_fail(err, errno, "append to `%s`", path);
    return 0;
}
