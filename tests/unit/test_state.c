/* test_state.c - record directories: ids beginning with '.', replace and
 * remove only the record that was read, users' records read without trust.
 * The users/ part needs root (files of another owner); says so otherwise. */
#define _GNU_SOURCE
#include "resview/state.h"
#include "unit.h"

#include <dirent.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char base[] = "/tmp/rv-unit-state.XXXXXX";

static int collect(const char *id, void *arg)
{
    char *list = arg;
    strcat(list, id);
    strcat(list, " ");
    return 0;
}

struct seen {
    char names[1024];
    unsigned n;
    int drop;
};

static int user_record(const char *name, uid_t uid, const struct stat *st, json_t *doc, void *arg)
{
    struct seen *s = arg;
    (void)uid;
    (void)st;
    s->n++;
    if (strlen(s->names) + strlen(name) + 8 >= sizeof(s->names))
        return s->drop;
    strcat(s->names, name);
    strcat(s->names, doc ? ":json " : ":null ");
    return s->drop;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void cleanup(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", base);
}

static json_t *doc(const char *text)
{
    json_t *j = NULL;
    struct rv_error err;
    rv_json_parse(text, strlen(text), "test", &j, &err);
    return j;
}

int main(void)
{
    struct rv_config cfg;
    struct rv_error err;
    struct rv_state_ref ref;
    struct stat st;
    char path[512], list[256] = "";
    json_t *a = doc("{\"pid\": 1}"), *b = doc("{\"pid\": 2}"), *got = NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rv_config_defaults(&cfg);
    ok(mkdtemp(base) != NULL, "temp dir");
    atexit(cleanup);
    snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", base);
    strcpy(cfg.host_state_dir, cfg.state_dir);

    ok(rv_state_write(&cfg, ".dot", "views", a, &err) == 0, "an id beginning with '.' is recorded");
    ok(rv_state_write(&cfg, "plain", "views", a, &err) == 0, "a plain id too");
    ok(stat(cfg.state_dir, &st) == 0 && (st.st_mode & 0777) == 0711, "state_dir is 0711");
    rv_state_foreach(&cfg, collect, list);
    ok(strstr(list, ".dot ") && strstr(list, "plain "), "both are visited: %s", list);
    ok(rv_state_write(&cfg, "..", "views", a, &err) < 0 && rv_state_write(&cfg, "a/b", "views", a, &err) < 0,
       "'..' and '/' are not ids");

    /* replace only what was read */
    ok(rv_state_read_ref(&cfg, "plain", "views", &got, &ref, &err) == 0, "read with a reference");
    json_decref(got);
    got = NULL;
    ok(rv_state_replace(&ref, "views", b, &err) == 1, "unchanged record: replaced");
    rv_state_ref_close(&ref);
    ok(rv_state_read_ref(&cfg, "plain", "views", &got, &ref, &err) == 0 &&
       json_integer_value(json_object_get(got, "pid")) == 2, "... with the new content");
    json_decref(got);
    got = NULL;
    ok(rv_state_write(&cfg, "plain", "views", a, &err) == 0, "someone else writes the record meanwhile");
    ok(rv_state_replace(&ref, "views", b, &err) == 0, "changed record: left alone");
    ok(rv_state_remove_if(&cfg, "plain", &ref, "views", &err) == 0, "... and not removed");
    rv_state_ref_close(&ref);
    ok(rv_state_read_ref(&cfg, "plain", "views", &got, &ref, &err) == 0 &&
       json_integer_value(json_object_get(got, "pid")) == 1, "the other writer's record stays");
    json_decref(got);
    got = NULL;
    ok(rv_state_remove(&cfg, "plain", &err) == 0 && !rv_state_exists(&cfg, "plain"),
       "the record is deleted meanwhile");
    ok(rv_state_replace(&ref, "views", b, &err) == 0 && !rv_state_exists(&cfg, "plain"),
       "a deleted record is not written back");
    ok(rv_state_remove_if(&cfg, "plain", &ref, "views", &err) == 0, "... nor removed twice");
    rv_state_ref_close(&ref);
    ok(rv_state_write(&cfg, "plain", "views", a, &err) == 0 &&
       rv_state_read_ref(&cfg, "plain", "views", &got, &ref, &err) == 0 &&
       rv_state_remove_if(&cfg, "plain", &ref, "views", &err) == 1 && !rv_state_exists(&cfg, "plain"),
       "an unchanged record is removed");
    json_decref(got);
    got = NULL;
    rv_state_ref_close(&ref);
    snprintf(path, sizeof(path), "%s/containers/empty", cfg.state_dir);
    ok(mkdir(path, 0700) == 0 && rv_state_remove_if(&cfg, "empty", NULL, NULL, &err) == 1 &&
       !rv_state_exists(&cfg, "empty"), "a record holding no file is removed");
    ok(rv_state_remove_if(&cfg, ".dot", NULL, NULL, &err) == 0 && rv_state_exists(&cfg, ".dot"),
       "... one holding a file is not");
    ok(rv_state_remove(&cfg, "none", &err) == 0, "removing what is not there is fine");

    if (geteuid() != 0) {
        printf("# not root: the users/ tests need root (make check runs as root)\n");
        json_decref(a);
        json_decref(b);
        return unit_done();
    }
    {
        struct seen s = { "", 0, 0 };
        char users[512], name[64];
        snprintf(users, sizeof(users), "%s/users", cfg.state_dir);
        chmod(cfg.state_dir, 0700);
        ok(rv_state_users_prepare(&cfg, &err) == 0 && stat(users, &st) == 0 &&
           (st.st_mode & 07777) == 01733 && st.st_uid == 0, "users/: root's, 1733");
        ok(stat(cfg.state_dir, &st) == 0 && (st.st_mode & 0011) == 0011, "an older 0700 state_dir opens to search");
        /* files as a user would leave them, and what a tenant might put there */
        snprintf(path, sizeof(path), "%s/good", users);
        put(path, "{\"pid\": 3}");
        ok(chown(path, 4242, 4242) == 0, "a user's record");
        snprintf(path, sizeof(path), "%s/notjson", users);
        put(path, "not json");
        ok(chown(path, 4242, 4242) == 0, "a user's file that is not JSON");
        snprintf(path, sizeof(path), "%s/rootfile", users);
        put(path, "{}");
        snprintf(path, sizeof(path), "%s/link", users);
        ok(symlink("/etc/passwd", path) == 0, "a symlink");
        snprintf(path, sizeof(path), "%s/fifo", users);
        ok(mkfifo(path, 0644) == 0 && chown(path, 4242, 4242) == 0, "a FIFO");
        snprintf(path, sizeof(path), "%s/huge", users);
        {
            int fd = open(path, O_WRONLY | O_CREAT, 0644);
            ok(fd >= 0 && ftruncate(fd, RV_USER_RECORD_MAX + 1) == 0 && fchown(fd, 4242, 4242) == 0,
               "a file too large");
            if (fd >= 0)
                close(fd);
        }
        snprintf(path, sizeof(path), "%s/.inprogress", users);
        put(path, "{}");
        ok(chown(path, 4242, 4242) == 0, "a writer's file before its rename");
        snprintf(path, sizeof(path), "%s/adir", users);
        ok(mkdir(path, 0755) == 0 && chown(path, 4242, 4242) == 0, "a directory a user made");
        snprintf(path, sizeof(path), "%s/adir/inside", users);
        put(path, "data a user keeps in /run");
        ok(rv_state_users_foreach(&cfg, user_record, &s, &err) == 0, "users' records read");
        ok(s.n == 2 && strstr(s.names, "good:json") && strstr(s.names, "notjson:null"),
           "only a user's regular files reach the caller: %s", s.names);
        snprintf(path, sizeof(path), "%s/link", users);
        ok(lstat(path, &st) < 0 && errno == ENOENT, "the symlink is removed (not followed)");
        snprintf(path, sizeof(path), "%s/fifo", users);
        ok(lstat(path, &st) < 0, "the FIFO is removed (no blocking on it)");
        snprintf(path, sizeof(path), "%s/huge", users);
        ok(lstat(path, &st) < 0, "the large file is removed");
        snprintf(path, sizeof(path), "%s/rootfile", users);
        ok(lstat(path, &st) < 0, "a file of root's is removed");
        snprintf(path, sizeof(path), "%s/.inprogress", users);
        ok(lstat(path, &st) == 0, "a writer's file before its rename is left alone");
        ok(stat("/etc/passwd", &st) == 0, "the symlink's target is untouched");
        snprintf(path, sizeof(path), "%s/adir", users);
        ok(lstat(path, &st) < 0, "the directory is removed, with what it held");
        s.drop = 1;
        s.n = 0;
        rv_state_users_foreach(&cfg, user_record, &s, &err);
        snprintf(path, sizeof(path), "%s/good", users);
        ok(s.n == 2 && lstat(path, &st) < 0, "records the caller is done with are removed");
        ok(rv_state_user_write(&cfg, a, name, sizeof(name), &err) < 0,
           "root's hook does not write users/ (a directory of its own uid)");
        /* a user's share: so many files, so many bytes; the rest is removed */
        {
            unsigned n_many = RV_USER_RECORDS_MAX + 5, n_big = RV_USER_BYTES_MAX / 4000 + 6;
            char big[4001];
            unsigned left = 0;
            DIR *d;
            struct dirent *de;
            memset(big, ' ', 4000);
            big[0] = '{';
            big[3999] = '}';
            big[4000] = '\0';
            for (unsigned i = 0; i < n_many; i++) {
                snprintf(path, sizeof(path), "%s/many-%u", users, i);
                put(path, "{}");
                if (chown(path, 4343, 4343) < 0)
                    break;
            }
            for (unsigned i = 0; i < n_big; i++) {
                snprintf(path, sizeof(path), "%s/big-%u", users, i);
                put(path, big);
                if (chown(path, 4444, 4444) < 0)
                    break;
            }
            s.drop = 0;
            s.n = 0;
            s.names[0] = '\0';
            rv_state_users_foreach(&cfg, user_record, &s, &err);
            ok(s.n == RV_USER_RECORDS_MAX + RV_USER_BYTES_MAX / 4000,
               "per user, %u files and %u bytes reach the caller (%u did)", RV_USER_RECORDS_MAX,
               RV_USER_BYTES_MAX, s.n);
            d = opendir(users);
            while (d && (de = readdir(d)))
                left += de->d_name[0] != '.';
            if (d)
                closedir(d);
            ok(left == s.n, "the files past a user's share are removed (%u left)", left);
        }
        /* the hook as a user: a record larger than RV_USER_RECORD_MAX is refused */
        {
            pid_t pid = fork();
            int ws = 0;
            if (pid == 0) {
                json_t *huge = json_object();
                char pad[RV_USER_RECORD_MAX];
                memset(pad, 'x', sizeof(pad) - 1);
                pad[sizeof(pad) - 1] = '\0';
                json_object_set_new(huge, "pad", json_string(pad));
                if (chmod(base, 0711) < 0 || setgid(4242) < 0 || setuid(4242) < 0)
                    _exit(3);
                if (rv_state_user_write(&cfg, huge, name, sizeof(name), &err) == 0 || err.errnum != EFBIG)
                    _exit(1);
                if (rv_state_user_write(&cfg, a, name, sizeof(name), &err) == 0)
                    _exit(0);
                fprintf(stderr, "# %s\n", err.msg);
                _exit(2);
            }
            ok(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
               "a user's hook: a record over %u bytes refused (EFBIG), a small one written (%d)",
               RV_USER_RECORD_MAX, WEXITSTATUS(ws));
        }
    }
    json_decref(a);
    json_decref(b);
    return unit_done();
}
