/* test_owners.c - root's memory of the users whose records repair acts on:
 * a child left stuck blocks the user while it lives, a timeout backs the user
 * off (doubling in a row), the per-run time, first-seen times kept by root
 * (only of records still there), all of it across runs (a file per user);
 * the same memory of a container (stalled/<inode>): a first child stuck
 * skips it while it lives, a second backs it off, a process gone forgets it. */
#define _GNU_SOURCE
#include "lxcfs/owners.h"
#include "resview/config.h"
#include "resview/proc.h"
#include "unit.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    char dir[] = "/tmp/rv-unit-owners.XXXXXX", path[600], why[256];
    struct rv_config cfg;
    struct rv_owners t = { 0 };
    struct rv_owner *o;
    long long now = time(NULL);
    struct stat st;
    pid_t child;

    rv_config_defaults(&cfg);
    if (!mkdtemp(dir))
        return 1;
    snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", dir);
    t.cfg = &cfg;

    o = rv_owner_get(&t, 4242);
    ok(o && o->uid == 4242 && rv_owner_get(&t, 4242) == o, "a user root knows nothing of");
    ok(rv_owner_blocked(o, now, why, sizeof(why)) == 0, "... is not blocked");
    ok(rv_owner_first_seen(o, 11, now - 5) == now - 5 && rv_owner_first_seen(o, 11, now) == now - 5,
       "first seen: the first time, then remembered");
    rv_owner_first_seen(o, 12, now);
    rv_owner_charge(o, 100, false, 0, now);
    ok(o->level == 0 && o->until == 0 && rv_owner_blocked(o, now, why, sizeof(why)) == 0,
       "a record that cost 100 ms: no back-off");
    rv_owner_charge(o, RV_OWNER_RUN_MS, false, 0, now);
    ok(rv_owner_blocked(o, now, why, sizeof(why)) == 1 && strstr(why, "of this run"),
       "past its time for this run: the rest wait (%s)", why);
    rv_owners_save(&t);
    snprintf(path, sizeof(path), "%s/owners/4242", dir);
    ok(stat(path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0600, "saved: root's, 0600");
    snprintf(path, sizeof(path), "%s/owners", dir);
    ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0700, "in a directory of root's alone (0700)");

    /* the next run: its time is new, what it saw is remembered; a record
     * not seen in a run is forgotten */
    o = rv_owner_get(&t, 4242);
    ok(o && rv_owner_blocked(o, now, why, sizeof(why)) == 0, "next run: time for the user again");
    ok(o && rv_owner_first_seen(o, 11, now) == now - 5, "next run: first seen as remembered");
    rv_owners_save(&t);
    o = rv_owner_get(&t, 4242);
    ok(o && rv_owner_first_seen(o, 12, now + 7) == now + 7, "a record not seen in a run is forgotten");

    /* a timeout alone (a busy host): remembered; a second one: backed off,
     * doubling in a row */
    rv_owner_charge(o, 2000, true, 0, now - 60);
    ok(o->level == 0 && o->until == 0 && o->last_timeout == now - 60 &&
       rv_owner_blocked(o, now, why, sizeof(why)) == 0, "one timeout: remembered, no back-off");
    rv_owners_save(&t);
    o = rv_owner_get(&t, 4242);
    rv_owner_charge(o, 2000, true, 0, now);
    ok(o->level == 1 && o->until == now + RV_OWNER_BACKOFF_S,
       "a second within %d s, in the next run: backed off %d s", RV_OWNER_BACKOFF_S, RV_OWNER_BACKOFF_S);
    ok(rv_owner_blocked(o, now + 1, why, sizeof(why)) == 1 && strstr(why, "backing off"),
       "... blocked meanwhile (%s)", why);
    rv_owners_save(&t);
    o = rv_owner_get(&t, 4242);
    ok(o && o->level == 1 && rv_owner_blocked(o, now + 1, why, sizeof(why)) == 1,
       "the back-off survives the run");
    rv_owner_charge(o, 2000, true, 0, now + RV_OWNER_BACKOFF_S);
    ok(o->until == now + RV_OWNER_BACKOFF_S && o->level == 1, "the back-off over: a timeout alone again");
    rv_owner_charge(o, 2000, true, 0, now + RV_OWNER_BACKOFF_S + 1);
    ok(o->until == now + RV_OWNER_BACKOFF_S + 1 + 2 * RV_OWNER_BACKOFF_S && o->level == 2,
       "and a second: twice as long, in a row");
    rv_owners_save(&t);
    o = rv_owner_get(&t, 4242);
    rv_owners_save(&t);       /* a run without trouble, the back-off over */
    o = rv_owner_get(&t, 4242);
    ok(o && o->level == 2, "a run within the back-off keeps the series");

    /* a child left stuck: none follows while it lives */
    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    o->until = 0;
    o->level = 0;
    rv_owner_charge(o, 2200, true, child, now);
    o->until = 0;             /* only the child blocks */
    ok(rv_owner_blocked(o, now, why, sizeof(why)) == 1 && strstr(why, "still stuck"),
       "a child left stuck: blocked (%s)", why);
    rv_owners_save(&t);
    o = rv_owner_get(&t, 4242);
    o->until = 0;
    ok(o && rv_owner_blocked(o, now, why, sizeof(why)) == 1, "... remembered across runs");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ok(rv_owner_blocked(o, now, why, sizeof(why)) == 0, "the child ended: not blocked by it");
    rv_owners_save(&t);

    /* a container's memory (repair.c): state_dir/stalled/<namespace inode> */
    {
        struct rv_owners ct = { .cfg = &cfg, .dir = "stalled" };
        pid_t gone;
        unsigned long long me_start = 0;
        char stat_buf[1024], *paren;
        FILE *f = fopen("/proc/self/stat", "r");

        if (f && fgets(stat_buf, sizeof(stat_buf), f) && (paren = strrchr(stat_buf, ')')))
            rv_parse_stat_start(stat_buf, &me_start);
        if (f)
            fclose(f);
        o = rv_owner_get_key(&ct, 4026532999ull, "the views of c1");
        o->stuck_alone_ok = true;
        rv_owner_of(o, getpid(), me_start);
        child = fork();
        if (child == 0) {
            pause();
            _exit(0);
        }
        rv_owner_charge(o, 2200, true, child, now);
        ok(o->level == 0 && o->until == 0 && rv_owner_blocked(o, now, why, sizeof(why)) == 1 &&
           strstr(why, "still stuck in its file systems"),
           "a container's first child left stuck: skipped while it lives, no back-off (%s)", why);
        rv_owners_save(&ct);
        snprintf(path, sizeof(path), "%s/stalled/4026532999", dir);
        ok(stat(path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0600,
           "remembered in stalled/<inode>, root's, 0600");
        ok(rv_owners_sweep(&ct) == 0 && stat(path, &st) == 0, "its process lives: the sweep keeps it");
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        o = rv_owner_get_key(&ct, 4026532999ull, "the views of c1");
        o->stuck_alone_ok = true;
        rv_owner_of(o, getpid(), me_start);
        ok(o->of_pid == getpid() && rv_owner_blocked(o, now, why, sizeof(why)) == 0,
           "the child ended (it answered): tried again");
        child = fork();
        if (child == 0) {
            pause();
            _exit(0);
        }
        rv_owner_charge(o, 2200, true, child, now + 10);
        ok(o->level == 1 && o->until == now + 10 + RV_OWNER_BACKOFF_S,
           "a second stall within %d s: backed off", RV_OWNER_BACKOFF_S);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        ok(rv_owner_blocked(o, now + 11, why, sizeof(why)) == 1 && strstr(why, "backing off"),
           "... even once that child ended (%s)", why);
        rv_owners_save(&ct);

        /* a namespace inode used again by another container: the memory of
         * a process that is gone, with no child stuck, is forgotten */
        gone = fork();
        if (gone == 0)
            _exit(0);
        waitpid(gone, NULL, 0);
        o = rv_owner_get_key(&ct, 4026532999ull, "the views of c2");
        ok(o && o->level == 1, "loaded again: backed off");
        rv_owner_of(o, gone, 12345);   /* the file now names a process that is gone */
        rv_owner_of(o, getpid(), me_start);
        ok(o->level == 0 && o->until == 0 && o->last_timeout == 0 &&
           rv_owner_blocked(o, now + 11, why, sizeof(why)) == 0,
           "another process in a namespace of that inode, the first gone: forgotten");
        /* nothing left to remember: no file */
        rv_owners_save(&ct);
        ok(stat(path, &st) < 0, "nothing to remember: the file is removed");

        /* a container that is gone: swept */
        o = rv_owner_get_key(&ct, 4026533000ull, "the views of c3");
        o->stuck_alone_ok = true;
        rv_owner_of(o, gone, 12345);
        rv_owner_charge(o, 2000, true, 0, now);
        rv_owners_save(&ct);
        snprintf(path, sizeof(path), "%s/stalled/4026533000", dir);
        ok(stat(path, &st) == 0, "a timeout: remembered");
        ok(rv_owners_sweep(&ct) == 1 && stat(path, &st) < 0, "its process gone, no child stuck: swept");
    }

    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    if (system(path) != 0)
        printf("# could not remove %s\n", dir);
    return unit_done();
}
