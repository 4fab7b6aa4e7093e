/* test_metrics.c - the counters file (concurrent adders, corrupt and foreign
 * files, a full file system), the text of a scrape, metrics.address, and the
 * exporter's HTTP server (bounded requests, a silent client). */
#define _GNU_SOURCE
#include "unit.h"
#include "resview/broker.h"
#include "resview/config.h"
#include "resview/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64], path[128];

static uint64_t slot(const struct rv_metrics_map *m, enum rv_metric s)
{
    return __atomic_load_n(&m->slots[s], __ATOMIC_RELAXED);
}

static void write_file(const char *p, const void *data, size_t len)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, data, len) != (ssize_t)len)
            perror("write");
        close(fd);
    }
}

static void test_missing(void)
{
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "no file: not counted, no error");
    ok(access(path, F_OK) < 0, "an adder never creates the file");
    ok(rv_metrics_add("/nonexistent/dir", RV_M_VIEWS_OK) < 0, "no directory: not counted");
    ok(rv_metrics_add(NULL, RV_M_VIEWS_OK) < 0, "no directory given: not counted");
}

static void test_create_and_add(void)
{
    struct rv_metrics_map m;
    struct rv_error err;
    struct stat st;

    ok(rv_metrics_map_open(dir, false, &m, &err) < 0, "map without create: refused when missing");
    ok(rv_metrics_map_open(dir, true, &m, &err) == 0, "map with create: %s", m.slots ? "made" : err.msg);
    ok(stat(path, &st) == 0 && st.st_size == RV_METRICS_FILE_SIZE && (st.st_mode & 0777) == 0644,
       "the file: one page, mode 0644");
    ok(st.st_blocks * 512 >= RV_METRICS_FILE_SIZE, "its page is allocated (no fault on a full /run)");
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) == 0 && slot(&m, RV_M_VIEWS_OK) == 1, "add: counted");
    ok(rv_metrics_addv(dir, (struct rv_metric_inc[]){ { RV_M_REPAIR_REPAIRED, 5 },
                                                      { RV_M_REPAIR_FAILED, 0 },
                                                      { (enum rv_metric)9999, 1 } }, 3) == 0 &&
       slot(&m, RV_M_REPAIR_REPAIRED) == 5 && slot(&m, RV_M_REPAIR_FAILED) == 0,
       "addv: several slots, a slot out of the table ignored");
    ok(rv_metrics_map_current(dir, &m), "the map is the named file");
    rv_metrics_map_close(&m);
    ok(rv_metrics_map_open(dir, true, &m, &err) == 0 && slot(&m, RV_M_VIEWS_OK) == 1,
       "the exporter's restart: the counts survive");
    ok(rv_metrics_swap(dir, RV_M_NRI_PID, 0, 1234) == 0 && slot(&m, RV_M_NRI_PID) == 1234 &&
       rv_metrics_swap(dir, RV_M_NRI_PID, 0, 99) < 0 && rv_metrics_swap(dir, RV_M_NRI_PID, 1234, 0) == 0 &&
       slot(&m, RV_M_NRI_PID) == 0, "swap: set only over the value expected");
    rv_metrics_nri_call(dir, 50000);          /* 50 us: the first bucket */
    rv_metrics_nri_call(dir, 3000000000ull);  /* 3 s: +Inf, over budget */
    ok(slot(&m, RV_M_NRI_BUCKET0) == 1 && slot(&m, RV_M_NRI_BUCKET_LAST) == 1 &&
       slot(&m, RV_M_NRI_OVER_BUDGET) == 1 && slot(&m, RV_M_NRI_SECONDS_NS) == 3000050000ull,
       "an NRI call: its bucket, the sum, over budget");
    rv_metrics_map_close(&m);
}

#define ADDERS 8
#define ADDS 20000

static void *thread_adds(void *arg)
{
    (void)arg;
    for (int i = 0; i < ADDS / 4; i++)
        rv_metrics_add(dir, RV_M_FUSE_ALLOWED_MOUNT);
    return NULL;
}

static void test_concurrent(void)
{
    struct rv_metrics_map m;
    struct rv_error err;
    pthread_t t[4];
    int bad = 0;

    rv_metrics_map_open(dir, true, &m, &err);
    for (int i = 0; i < ADDERS; i++) {
        pid_t p = fork();
        if (p == 0) {
            for (int k = 0; k < ADDS; k++)
                if (rv_metrics_add(dir, RV_M_VARS_OK) < 0)
                    _exit(1);
            _exit(0);
        }
    }
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_adds, NULL);
    for (int i = 0; i < ADDERS; i++) {
        int status;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad++;
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ok(bad == 0 && slot(&m, RV_M_VARS_OK) == (uint64_t)ADDERS * ADDS,
       "%d processes adding %d each: %llu, none lost", ADDERS, ADDS,
       (unsigned long long)slot(&m, RV_M_VARS_OK));
    ok(slot(&m, RV_M_FUSE_ALLOWED_MOUNT) == ADDS, "4 threads beside them: %llu",
       (unsigned long long)slot(&m, RV_M_FUSE_ALLOWED_MOUNT));
    rv_metrics_map_close(&m);
}

static void test_foreign(void)
{
    struct rv_metrics_map m;
    struct rv_error err;
    char page[RV_METRICS_FILE_SIZE];
    long t0;

    memset(page, 'x', sizeof(page));
    write_file(path, page, sizeof(page));
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "a page of garbage: not counted into");
    write_file(path, page, 100);
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "a short file: not counted into (no SIGBUS)");
    ok(truncate(path, 1 << 20) == 0, "the file made 1 MiB");
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "a file of another size: not counted into");
    /* a valid file of another layout (another release's table) */
    unlink(path);
    rv_metrics_map_open(dir, true, &m, &err);
    ((uint64_t *)m.base)[2] ^= 1;   /* the layout hash */
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "another layout: not counted into");
    rv_metrics_map_close(&m);
    ok(rv_metrics_map_open(dir, true, &m, &err) == 0 && slot(&m, RV_M_VIEWS_OK) == 0 &&
       rv_metrics_add(dir, RV_M_VIEWS_OK) == 0 && slot(&m, RV_M_VIEWS_OK) == 1,
       "the exporter replaces it with a fresh file of its layout");
    rv_metrics_map_close(&m);
    unlink(path);
    ok(symlink("/etc/passwd", path) == 0, "a symlink to a host file in its place");
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "a symlink: not followed");
    ok(rv_metrics_map_open(dir, true, &m, &err) == 0, "the exporter replaces the symlink");
    {
        struct stat st;
        ok(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "… with a regular file");
    }
    rv_metrics_map_close(&m);
    unlink(path);
    mkfifo(path, 0644);
    t0 = (long)time(NULL);
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0 && time(NULL) - t0 < 2, "a FIFO: refused, no wait");
    unlink(path);
    mkdir(path, 0755);
    ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "a directory: refused");
    ok(rv_metrics_map_open(dir, true, &m, &err) < 0, "the exporter says it cannot replace it: %s",
       err.msg);
    rmdir(path);
    if (geteuid() == 0) {
        rv_metrics_map_open(dir, true, &m, &err);
        ok(chown(path, 65534, 65534) == 0, "given to another user");
        ok(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0, "a file owned by another user: not counted into");
        ok(chown(path, 0, 0) == 0, "given back");
        chmod(path, 0644);
        /* an unprivileged adder (a rootless hook) cannot write it: it does not count */
        pid_t p = fork();
        if (p == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(2);
            _exit(rv_metrics_add(dir, RV_M_VIEWS_OK) < 0 ? 0 : 1);
        }
        int status = -1;
        waitpid(p, &status, 0);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && slot(&m, RV_M_VIEWS_OK) == 0,
           "a user's hook: not counted, no error");
        rv_metrics_map_close(&m);
    } else {
        ok(1, "# SKIP ownership: needs root");
    }
    unlink(path);
}

/* A full /run: a 1-page tmpfs. The exporter cannot create the file; a file
 * made before the file system filled up is still counted into (its page
 * was allocated at creation). */
static void test_full(void)
{
    char mnt[64], filler[128], p[160];
    struct rv_metrics_map m;
    struct rv_error err;
    int fd;

    if (geteuid() != 0) {
        ok(1, "# SKIP a full tmpfs: needs root to mount one");
        return;
    }
    snprintf(mnt, sizeof(mnt), "%s/full", dir);
    mkdir(mnt, 0755);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=16k") < 0) {
        ok(0, "mount a tmpfs: %s", strerror(errno));
        return;
    }
    ok(rv_metrics_map_open(mnt, true, &m, &err) == 0, "created on a small tmpfs");
    snprintf(filler, sizeof(filler), "%s/filler", mnt);
    fd = open(filler, O_WRONLY | O_CREAT, 0644);
    {
        char buf[4096];
        memset(buf, 1, sizeof(buf));
        while (write(fd, buf, sizeof(buf)) > 0)
            ;
    }
    close(fd);
    ok(rv_metrics_add(mnt, RV_M_VIEWS_OK) == 0 && slot(&m, RV_M_VIEWS_OK) == 1,
       "the file system full: still counted (no SIGBUS)");
    rv_metrics_map_close(&m);
    snprintf(p, sizeof(p), "%s/%s", mnt, RV_METRICS_FILE);
    unlink(p);
    fd = open(filler, O_WRONLY | O_APPEND);
    {
        char buf[4096];
        memset(buf, 1, sizeof(buf));
        while (write(fd, buf, sizeof(buf)) > 0)
            ;
    }
    close(fd);
    ok(rv_metrics_map_open(mnt, true, &m, &err) < 0 && err.errnum == ENOSPC,
       "no file can be made on a full file system: said (%s)", err.msg);
    ok(rv_metrics_add(mnt, RV_M_VIEWS_OK) < 0, "… and adders do not count");
    snprintf(p, sizeof(p), "%s/.%s.%d.tmp", mnt, RV_METRICS_FILE, (int)getpid());
    ok(access(p, F_OK) < 0, "no temporary file left");
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
}

static void test_render(void)
{
    uint64_t slots[RV_M_COUNT] = { 0 };
    struct rv_metrics_view v = { .slots = slots, .version = "1.2\"\\\n3\x01", .config_valid = 1,
                                 .g = { .lxcfs_known = 1, .lxcfs_up = 1, .probe_ns = 1500000 } };
    static char buf[65536];
    int n;

    slots[RV_M_NOVIEWS_LXCFS_DOWN] = 3;
    slots[RV_M_NRI_BUCKET0] = 2;
    slots[RV_M_NRI_BUCKET0 + 3] = 1;
    slots[RV_M_NRI_SECONDS_NS] = 1500000000ull;
    n = rv_metrics_render(&v, buf, sizeof(buf));
    ok(n > 0 && (size_t)n == strlen(buf), "rendered: %d bytes", n);
    ok(strstr(buf, "resview_build_info{version=\"1.2\\\"\\\\\\n3\"} 1\n") != NULL,
       "the version escaped as a label value must be");
    ok(strstr(buf, "resview_container_views_total{views=\"no\",reason=\"lxcfs_down\"} 3\n") != NULL,
       "a counter with its labels");
    ok(strstr(buf, "resview_lxcfs_up 1\n") && strstr(buf, "resview_lxcfs_probe_seconds 0.001500000\n"),
       "watch's gauges");
    ok(strstr(buf, "resview_nri_call_duration_seconds_bucket{le=\"0.001\"} 3\n") &&
       strstr(buf, "resview_nri_call_duration_seconds_bucket{le=\"+Inf\"} 3\n") &&
       strstr(buf, "resview_nri_call_duration_seconds_count 3\n") &&
       strstr(buf, "resview_nri_call_duration_seconds_sum 1.500000000\n"),
       "the histogram: cumulative buckets, sum, count");
    ok(strstr(buf, "resview_config_valid 1\n") && strstr(buf, "resview_counters_ok 1\n"),
       "config and counters gauges");
    ok(rv_metrics_render(&v, buf, 100) < 0, "a buffer too small: -1, not a cut text");
    v.slots = NULL;
    v.g.lxcfs_known = 0;
    n = rv_metrics_render(&v, buf, sizeof(buf));
    ok(n > 0 && strstr(buf, "resview_counters_ok 0\n") && !strstr(buf, "container_views") &&
       !strstr(buf, "lxcfs_up"), "no counters file, LXCFS not looked at yet: those absent");
    {
        /* every line: a comment or NAME[{LABELS}] VALUE, with no tenant's text possible */
        int lines = 0, bad = 0;
        v.slots = slots;
        rv_metrics_render(&v, buf, sizeof(buf));
        for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"), lines++)
            if (l[0] != '#' && strncmp(l, "resview_", 8) != 0)
                bad++;
        ok(lines > 40 && bad == 0, "%d lines, every one a comment or a resview_ sample", lines);
    }
}

static void test_address(void)
{
    char h[64], p[8];
    struct rv_error err;

    ok(rv_parse_listen_address("127.0.0.1:9464", h, sizeof(h), p, sizeof(p), &err) == 0 &&
       strcmp(h, "127.0.0.1") == 0 && strcmp(p, "9464") == 0, "HOST:PORT");
    ok(rv_parse_listen_address(":9464", h, sizeof(h), p, sizeof(p), &err) == 0 && !*h, ":PORT");
    ok(rv_parse_listen_address("[::1]:80", h, sizeof(h), p, sizeof(p), &err) == 0 &&
       strcmp(h, "::1") == 0, "[V6]:PORT");
    ok(rv_parse_listen_address("localhost:80", h, sizeof(h), p, sizeof(p), &err) < 0, "a name: refused");
    ok(rv_parse_listen_address("1.2.3.4", h, sizeof(h), p, sizeof(p), &err) < 0, "no port: refused");
    ok(rv_parse_listen_address("1.2.3.4:70000", h, sizeof(h), p, sizeof(p), &err) < 0, "port > 65535");
    ok(rv_parse_listen_address("::1:80", h, sizeof(h), p, sizeof(p), &err) < 0, "bare IPv6: refused");
    {
        struct rv_config cfg;
        struct rv_error e2;
        const char good[] = "{\"metrics\": {\"address\": \"127.0.0.1:9464\"}}";
        const char bad[] = "{\"metrics\": {\"address\": \"example.com:80\", \"path\": 1}}";
        rv_config_defaults(&cfg);
        ok(cfg.metrics_address[0] == '\0', "metrics off by default");
        ok(rv_config_parse(&cfg, good, strlen(good), &e2) == 0 && cfg.n_warnings == 0 &&
           strcmp(cfg.metrics_address, "127.0.0.1:9464") == 0, "metrics.address read");
        rv_config_defaults(&cfg);
        ok(rv_config_parse(&cfg, bad, strlen(bad), &e2) == 0 && cfg.n_warnings == 2 &&
           cfg.metrics_address[0] == '\0', "a name and an unknown key: two warnings, metrics off");
    }
}

static void test_broker_count(void)
{
    static const int refused[][2] = {
        { EPERM, RV_M_FUSE_REFUSED_NOT_ALLOWED }, { EACCES, RV_M_FUSE_REFUSED_NOT_ALLOWED },
        { ENOSPC, RV_M_FUSE_REFUSED_LIMIT }, { EAGAIN, RV_M_FUSE_REFUSED_BUSY },
        { EINVAL, RV_M_FUSE_REFUSED_INVALID }, { EFAULT, RV_M_FUSE_REFUSED_INVALID },
        { ENOSYS, RV_M_FUSE_REFUSED_UNSUPPORTED }, { EIO, RV_M_FUSE_REFUSED_ERROR },
    };
    struct rv_metrics_map m;
    struct rv_error err;
    int bad = 0;

    unlink(path);
    rv_metrics_map_open(dir, true, &m, &err);
    rv_broker_count_answer(dir, RV_CALL_MOUNT, 0);
    rv_broker_count_answer(dir, RV_CALL_UMOUNT2, 0);
    ok(slot(&m, RV_M_FUSE_ALLOWED_MOUNT) == 1 && slot(&m, RV_M_FUSE_ALLOWED_UMOUNT) == 1,
       "the broker: a mount and an umount2 allowed");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        uint64_t before = slot(&m, (enum rv_metric)refused[i][1]);
        rv_broker_count_answer(dir, RV_CALL_MOUNT, -refused[i][0]);
        if (slot(&m, (enum rv_metric)refused[i][1]) != before + 1)
            bad++;
    }
    ok(bad == 0, "the broker: each refusal under its reason");
    rv_broker_count_answer(NULL, RV_CALL_MOUNT, 0);
    rv_broker_count_answer("", RV_CALL_MOUNT, 0);
    ok(slot(&m, RV_M_FUSE_ALLOWED_MOUNT) == 1, "the broker without a counters directory: nothing");
    rv_metrics_map_close(&m);
    unlink(path);
}

static void test_broker_dir(void)
{
    char out[64];

    rv_broker_metrics_dir("/run/resview/fuse/held", out, sizeof(out));
    ok(strcmp(out, "/run/resview") == 0, "the broker's counters: the state_dir of its table");
    rv_broker_metrics_dir("/elsewhere/held", out, sizeof(out));
    ok(out[0] == '\0', "… none for a table elsewhere");
    rv_broker_metrics_dir(NULL, out, sizeof(out));
    ok(out[0] == '\0', "… none without a table");
}

static int connect_port(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One request; the whole response into buf (closed by the server). */
static ssize_t http(int port, const char *req, size_t len, char *buf, size_t size)
{
    int fd = connect_port(port);
    size_t got = 0;
    ssize_t r;

    if (fd < 0)
        return -1;
    if (write(fd, req, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    struct pollfd p = { .fd = fd, .events = POLLIN };
    while (got + 1 < size && poll(&p, 1, 3000) > 0 && (r = read(fd, buf + got, size - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    return (ssize_t)got;
}

static void test_server(void)
{
    struct rv_config cfg;
    struct rv_metrics_server *s;
    struct rv_error err;
    static char buf[70000];
    const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    int port, silent[20];
    long t0;

    rv_config_defaults(&cfg);
    setenv("RESVIEW_CONFIG", "/nonexistent/config.json", 1);
    snprintf(cfg.host_state_dir, sizeof(cfg.host_state_dir), "%s", dir);
    ok(rv_metrics_serve(&cfg, &s, &err) == 0 && s == NULL, "metrics.address unset: nothing served");
    snprintf(cfg.metrics_address, sizeof(cfg.metrics_address), "127.0.0.1:0");
    setenv("RESVIEW_METRICS_ADDRESS", "", 1);
    ok(rv_metrics_serve(&cfg, &s, &err) == 0 && s == NULL, "RESVIEW_METRICS_ADDRESS empty: off, over the file's");
    setenv("RESVIEW_METRICS_ADDRESS", "example.com:1", 1);
    ok(rv_metrics_serve(&cfg, &s, &err) < 0 && s == NULL, "… a name: refused (%s)", err.msg);
    unsetenv("RESVIEW_METRICS_ADDRESS");
    ok(rv_metrics_serve(&cfg, &s, &err) == 0 && s, "served on 127.0.0.1:0: %s", s ? "" : err.msg);
    if (!s)
        return;
    port = rv_metrics_port(s);
    rv_metrics_note_lxcfs(s, true, 10, rv_metrics_clock());
    rv_metrics_note_lxcfs(s, false, 0, rv_metrics_clock());
    rv_metrics_note_lxcfs(s, true, 11, rv_metrics_clock());   /* a new mount: a restart seen */
    ok(http(port, get, strlen(get), buf, sizeof(buf)) > 0 && strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0 &&
       strstr(buf, "Content-Type: text/plain; version=0.0.4") && strstr(buf, "\r\n\r\n# HELP"),
       "GET /metrics: 200, the text format");
    ok(strstr(buf, "resview_lxcfs_up 1\n") && strstr(buf, "resview_lxcfs_restarts_total 1\n") &&
       strstr(buf, "resview_counters_ok 1\n") && strstr(buf, "resview_config_valid 0\n"),
       "LXCFS up, one restart seen, the counters file made, the configuration (missing) invalid");
    ok(http(port, "GET / HTTP/1.1\r\n\r\n", 18, buf, sizeof(buf)) > 0 && strstr(buf, " 404 "), "GET /: 404");
    ok(http(port, "POST /metrics HTTP/1.1\r\n\r\n", 26, buf, sizeof(buf)) > 0 && strstr(buf, " 405 "),
       "POST: 405");
    {
        static char big[20000];
        memset(big, 'a', sizeof(big));
        memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
        ok(http(port, big, sizeof(big), buf, sizeof(buf)) <= 0 || !strstr(buf, "200 OK"),
           "a request past 8 KiB: closed without an answer");
    }
    /* clients that connect and say nothing: never a scrape's wait */
    for (int i = 0; i < 20; i++)
        silent[i] = connect_port(port);
    t0 = rv_now_ms();
    ok(http(port, get, strlen(get), buf, sizeof(buf)) > 0 && strstr(buf, "200 OK") && rv_now_ms() - t0 < 500,
       "20 silent clients: a scrape still answered at once (%ld ms)",
       rv_now_ms() - t0);
    for (int i = 0; i < 20; i++)
        if (silent[i] >= 0)
            close(silent[i]);
    t0 = rv_now_ms();
    ok(http(port, get, strlen(get), buf, sizeof(buf)) > 0 && strstr(buf, "200 OK") && rv_now_ms() - t0 < 500,
       "then at once (%ld ms)", rv_now_ms() - t0);
    rv_metrics_stop(s);
    ok(connect_port(port) < 0, "stopped: the port closed");
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_metrics.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, RV_METRICS_FILE);
    test_missing();
    test_create_and_add();
    test_concurrent();
    test_foreign();
    test_full();
    test_render();
    test_address();
    test_broker_dir();
    test_broker_count();
    test_server();
    unlink(path);
    rmdir(dir);
    return unit_done();
}
