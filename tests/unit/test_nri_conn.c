/* test_nri_conn.c - the NRI plugin's connection as the runtime and the
 * operator see it, with a real plugin (rv_nri_run in a child) and a fake
 * runtime on a Unix socket (nri_fake.h): one instance per socket (a second
 * one refused, naming the first, leaving its record), the record written and
 * removed by its owner only, "serving" as the kernel and the plugin's status
 * say it (a stopped plugin with a call waiting: not answering; the runtime's
 * end closed: closed), the dropped call's log line, and Synchronize: the
 * running containers resview serves and that have no record get one (and a
 * note for doctor), the others are left alone.
 * RESVIEW_NRI_FAKE="SOCK ID PID CGROUPS_PATH": be the fake runtime for e2e
 * 57 (tests/e2e/57-nri-sync.sh), driven by lines on stdin (accept, sync-fail,
 * call, close, create ID, start ID PID, remove ID). */
#define _GNU_SOURCE
#include "unit.h"
#include "nri/nri_msg.h"
#include "nri_fake.h"
#include "resview/log.h"
#include "resview/hook.h"
#include "resview/state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmp[] = "/tmp/rv-nric-XXXXXX";
static struct rv_config cfg;

static void conf_init(Nri__Pkg__Api__V1alpha1__ConfigureRequest *conf, int64_t timeout_ms)
{
    nri__pkg__api__v1alpha1__configure_request__init(conf);
    conf->runtime_name = "fakerd";
    conf->runtime_version = "v9";
    conf->request_timeout = timeout_ms;
}

static int wait_record(int want, struct rv_nri_registration *reg)
{
    struct rv_error err;
    int r = -1;
    for (int i = 0; i < 100 && (r = rv_nri_record_read(&cfg, reg, &err)) != want; i++)
        usleep(50000);
    return r;
}

/* Whether a line of the log has both (b NULL: a) */
static bool log_line_has(const char *a, const char *b)
{
    char line[4096];
    bool yes = false;
    FILE *f = fopen(cfg.log_file, "re");
    while (f && !yes && fgets(line, sizeof(line), f))
        yes = strstr(line, a) && (!b || strstr(line, b));
    if (f)
        fclose(f);
    return yes;
}

static bool log_has(const char *needle)
{
    return log_line_has(needle, NULL);
}

static pid_t plugin_start(const char *sock)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct rv_error err;
        alarm(60);
        rv_log_init("nri", &cfg);
        if (rv_nri_run(&cfg, sock, &err) < 0) {
            printf("# second: %s\n", err.msg);
            _exit(err.errnum == EBUSY ? 3 : 1);
        }
        _exit(0);
    }
    return pid;
}

/* ---- one instance per socket ---- */

static void test_lock(void)
{
    char sock[256], sock2[256];
    int fd = -1;
    struct rv_nri_status *st = NULL;
    struct rv_error err;

    snprintf(sock, sizeof(sock), "%s/a.sock", tmp);
    snprintf(sock2, sizeof(sock2), "%s/b.sock", tmp);
    ok(rv_nri_lock(&cfg, sock, &fd, &st, &err) == 0 && st && st->pid == getpid(),
       "the first instance takes the socket's lock; its status names it");
    pid_t pid = fork();
    if (pid == 0) {
        int fd2 = -1;
        struct rv_nri_status *st2;
        struct rv_error e2;
        char want[64];
        snprintf(want, sizeof(want), "(pid %d)", (int)getppid());
        int same = rv_nri_lock(&cfg, sock, &fd2, &st2, &e2) < 0 && e2.errnum == EBUSY && strstr(e2.msg, want);
        printf("# %s\n", e2.msg);
        int other = rv_nri_lock(&cfg, sock2, &fd2, &st2, &e2) == 0;
        _exit(same && other ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "another process: the same socket refused naming the holder's pid, another socket taken");

    /* one socket, other spellings: its directory through `.`, `//`, `..`, a
     * link to it (as /var/run to /run), a relative path */
    char link[256], path[256];
    snprintf(link, sizeof(link), "%s/link", tmp);
    snprintf(path, sizeof(path), "%s/sub", tmp);
    ok(symlink(tmp, link) == 0 && mkdir(path, 0755) == 0, "a link to the socket's directory, a directory in it");
    pid = fork();
    if (pid == 0) {
        const char *tail[] = { "/./a.sock", "//a.sock", "/sub/../a.sock", "/link/a.sock",
                               "/link/./link//a.sock" };
        int refused = 0, fd2 = -1;
        struct rv_nri_status *st2;
        struct rv_error e2;
        char spelled[300];
        for (int i = 0; i < 5; i++) {
            snprintf(spelled, sizeof(spelled), "%s%s", tmp, tail[i]);
            refused += rv_nri_lock(&cfg, spelled, &fd2, &st2, &e2) < 0 && e2.errnum == EBUSY;
        }
        if (chdir(link) == 0)
            refused += rv_nri_lock(&cfg, "a.sock", &fd2, &st2, &e2) < 0 && e2.errnum == EBUSY;
        _exit(refused == 6 ? 0 : 10 + refused);
    }
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "the same socket spelled six other ways (`.`, `//`, `..`, a linked directory, relative): refused "
       "(exit %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    char id1[PATH_MAX], id2[PATH_MAX];
    ok(rv_nri_socket_identity("/nonexistent-rv//x/./y/../nri.sock", id1, sizeof(id1)) == 0 &&
       strcmp(id1, "/nonexistent-rv/x/nri.sock") == 0 && rv_nri_socket_identity("/nri.sock", id2, sizeof(id2)) == 0 &&
       strcmp(id2, "/nri.sock") == 0, "a directory not there yet: cleaned as written (%s, %s)", id1, id2);
    close(fd);
    munmap(st, sizeof(*st));
}

/* ---- a real plugin: second instance, serving, stopped, closed, dropped call ---- */

static void test_plugin(void)
{
    char sock[256], why[256], said[512];
    struct rv_mux_in in;
    Ttrpc__Response *resp = NULL;
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf;
    struct rv_nri_registration reg;
    long long since;

    snprintf(sock, sizeof(sock), "%s/nri.sock", tmp);
    int lfd = listen_at(sock);
    pid_t pid = plugin_start(sock);
    int fd = accept_register(lfd, &in);
    ok(fd >= 0, "the plugin registered");
    conf_init(&conf, 1000);
    ok(runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0 && sync_empty(fd, &in, 2001) == 0,
       "configured (request timeout 1 s), synchronized");
    ttrpc__response__free_unpacked(resp, NULL);
    ok(wait_record(RV_NRI_REG_LIVE, &reg) == RV_NRI_REG_LIVE && reg.pid == pid && reg.ino > 0 &&
       reg.timeout_ms == 1000, "the record names the plugin, its connection's inode and the timeout");
    int sv = rv_nri_serving(&cfg, &reg, 1000, &since, why, sizeof(why));
    rv_nri_serving_say(sv, since, why, said, sizeof(said));
    ok(sv == RV_NRI_SERVING, "connected and idle: serving (%s)", said);

    /* a second instance on the same socket: refused, the first's record kept */
    pid_t second = plugin_start(sock);
    int status = -1;
    waitpid(second, &status, 0);
    struct rv_nri_registration now;
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 3 && wait_record(RV_NRI_REG_LIVE, &now) == RV_NRI_REG_LIVE &&
       now.pid == pid, "a second instance on the socket is refused (exit %d) and the record is still pid %d's",
       WIFEXITED(status) ? WEXITSTATUS(status) : -1, now.pid);

    /* stopped with a call waiting: not answering; resumed: it answers */
    kill(pid, SIGSTOP);
    struct timespec pause = { 0, 100 * 1000000L };
    nanosleep(&pause, NULL);
    ok(send_call(fd, 3, "Shutdown", NULL) == 0, "a call sent to the stopped plugin");
    long t0 = rv_now_ms();
    sv = rv_nri_serving(&cfg, &reg, 5000, &since, why, sizeof(why));
    rv_nri_serving_say(sv, since, why, said, sizeof(said));
    ok(sv == RV_NRI_HUNG && rv_now_ms() - t0 >= 900 && strncmp(said, "not answering since 20", 22) == 0,
       "stopped, a call unread for the runtime's timeout: %s", said);
    kill(pid, SIGCONT);
    struct rv_ttrpc_msg m;
    ok(read_msg(fd, &in, RV_MUX_PLUGIN, &m) == 1 && m.stream == 3, "resumed: the call is answered");
    ok(rv_nri_serving(&cfg, &reg, 1000, &since, why, sizeof(why)) == RV_NRI_SERVING, "and it is serving again");

    /* stopped, the runtime closes the connection on a call: closed; resumed: the dropped call is said */
    kill(pid, SIGSTOP);
    nanosleep(&pause, NULL);
    ok(send_call(fd, 5, "Shutdown", NULL) == 0, "another call to the stopped plugin");
    close(fd);
    rv_mux_in_free(&in);
    sv = rv_nri_serving(&cfg, &reg, 1000, &since, why, sizeof(why));
    rv_nri_serving_say(sv, since, why, said, sizeof(said));
    ok(sv == RV_NRI_CLOSED && strncmp(said, "connection closed by the runtime", 32) == 0,
       "the runtime closed the connection: %s", said);
    kill(pid, SIGCONT);
    fd = accept_register(lfd, &in);
    ok(fd >= 0, "resumed: the plugin registers again");
    ok(log_has("NRI: the runtime closed the connection: containers created meanwhile get views at "
               "re-registration, not variables ("), "the dropped call is logged as such");
    ok(wait_record(RV_NRI_REG_NONE, &now) == RV_NRI_REG_NONE, "until configured again, no record");
    conf_init(&conf, 1000);
    ok(runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0 && sync_empty(fd, &in, 2001) == 0,
       "configured again, synchronized");
    ttrpc__response__free_unpacked(resp, NULL);
    ok(wait_record(RV_NRI_REG_LIVE, &now) == RV_NRI_REG_LIVE && now.ino != reg.ino,
       "the new record names the new connection");

    /* the record is the owner's: another process's is left alone at SIGTERM */
    char path[PATH_MAX];
    rv_nri_record_path(&cfg, path, sizeof(path));
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && wait_record(RV_NRI_REG_NONE, &now) == RV_NRI_REG_NONE,
       "SIGTERM: the owner removes its record");
    close(fd);
    rv_mux_in_free(&in);
    close(lfd);
    unlink(sock);
}

/* ---- Synchronize ---- */

struct sync_c {
    nri_container c;
    Nri__Pkg__Api__V1alpha1__LinuxContainer lin;
    Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ann, *annp;
};

static void sync_container(struct sync_c *s, const char *id, pid_t pid, int state)
{
    memset(s, 0, sizeof(*s));
    nri__pkg__api__v1alpha1__container__init(&s->c);
    nri__pkg__api__v1alpha1__linux_container__init(&s->lin);
    s->c.id = (char *)id;
    s->c.pod_sandbox_id = "pod1";
    s->c.pid = (uint32_t)pid;
    s->c.state = state;
    s->c.linux = &s->lin;
    s->lin.cgroups_path = "/rv-nric";
}

static void test_sync(void)
{
    char sock[256], path[PATH_MAX];
    struct rv_mux_in in;
    Ttrpc__Response *resp = NULL;
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf;
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    nri_pod pod, vm, *podp[2] = { &pod, &vm };
    struct sync_c c[6];
    nri_container *cp[6];
    struct rv_error err;
    struct stat st;

    pid_t sleeper = fork();
    if (sleeper == 0) {
        alarm(60);
        pause();
        _exit(0);
    }
    nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
    pod.id = "pod1";
    pod.runtime_handler = "runc";
    nri__pkg__api__v1alpha1__pod_sandbox__init(&vm);
    vm.id = "pod2";
    vm.runtime_handler = "kata";
    sync_container(&c[0], "served1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    sync_container(&c[1], "optout1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    nri__pkg__api__v1alpha1__container__annotations_entry__init(&c[1].ann);
    c[1].ann.key = "resview.io/lxcfs";
    c[1].ann.value = "false";
    c[1].annp = &c[1].ann;
    c[1].c.annotations = &c[1].annp;
    c[1].c.n_annotations = 1;
    sync_container(&c[2], "stopped1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_STOPPED);
    sync_container(&c[3], "recorded1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    sync_container(&c[4], "nopod1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    c[4].c.pod_sandbox_id = "elsewhere";
    sync_container(&c[5], "kata1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    c[5].c.pod_sandbox_id = "pod2";
    for (int i = 0; i < 6; i++)
        cp[i] = &c[i].c;
    /* recorded1 has a record (the hook's): not ours to touch */
    json_t *env = json_pack("{s:[]}", "env");
    ok(rv_state_write(&cfg, "recorded1", "env", env, &err) == 0, "a record for recorded1");
    json_decref(env);
    sync.pods = podp;
    sync.n_pods = 2;
    sync.containers = cp;
    sync.n_containers = 6;

    snprintf(sock, sizeof(sock), "%s/sync.sock", tmp);
    int lfd = listen_at(sock);
    pid_t pid = plugin_start(sock);
    int fd = accept_register(lfd, &in);
    conf_init(&conf, 2000);
    ok(fd >= 0 && runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0, "registered, configured");
    ttrpc__response__free_unpacked(resp, NULL);
    long t0 = rv_now_ms();
    ok(runtime_call(fd, &in, 3, "Synchronize", &sync.base, &resp) == 0 && (!resp->status || resp->status->code == 0),
       "Synchronize answered in %ld ms", rv_now_ms() - t0);
    ttrpc__response__free_unpacked(resp, NULL);
    bool noted = false;
    t0 = rv_now_ms();
    /* the repair is a detached grandchild: under valgrind it takes seconds */
    for (int i = 0; i < 400 && !noted; i++) {
        usleep(50000);
        noted = rv_state_stat(&cfg, "served1", RV_NRI_SYNC_FILE, &st) == 0 &&
                (log_has("NRI: views given to") || log_has("NRI: the views of 1 containers"));
    }
    ok(noted && rv_state_stat(&cfg, "served1", RV_VIEWS_FILE, &st) == 0,
       "a running container resview serves, without a record: recorded (views, and the note) and repaired "
       "(%ld ms)", rv_now_ms() - t0);
    ok(log_line_has("served1", "NRI: created while the plugin was not registered (pid") &&
       log_line_has("served1", "its variables are missing until it is re-created"), "and said in the log, by id");
    ok(!rv_state_exists(&cfg, "optout1") && !rv_state_exists(&cfg, "stopped1") && !rv_state_exists(&cfg, "nopod1"),
       "opted out, stopped, or of no pod named: left alone");
    ok(!rv_state_exists(&cfg, "kata1"), "a pod of a runtime handler resview does not serve (kata): left alone");
    ok(rv_state_stat(&cfg, "recorded1", RV_NRI_SYNC_FILE, &st) < 0 &&
       rv_state_stat(&cfg, "recorded1", RV_VIEWS_FILE, &st) < 0, "a container with a record: left alone");
    json_t *rec = NULL;
    ok(rv_state_read(&cfg, "served1", RV_VIEWS_FILE, &rec, &err) == 0 &&
       json_integer_value(json_object_get(rec, "pid")) == sleeper &&
       json_integer_value(json_object_get(rec, "mntns")) > 0,
       "its record names its process and mount namespace (repair's identity of it)");
    json_decref(rec);
    /* re-registration: said once */
    snprintf(path, sizeof(path), "%s/containers/served1/%s", cfg.state_dir, RV_NRI_SYNC_FILE);
    struct stat before;
    stat(path, &before);
    ok(runtime_call(fd, &in, 5, "Synchronize", &sync.base, &resp) == 0, "Synchronize again");
    ttrpc__response__free_unpacked(resp, NULL);
    sleep(1);
    ok(stat(path, &st) == 0 && st.st_ino == before.st_ino, "a container already noted is not noted again");
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    close(fd);
    rv_mux_in_free(&in);
    close(lfd);
}

/* ---- Synchronize against hostile runtimes and tenants ---- */

/* A call whose payload is raw bytes, answered: 0 with the answer's status
 * code in *code and its SynchronizeResponse's more in *more. */
static int raw_call(int fd, struct rv_mux_in *in, uint32_t stream, const char *method, const uint8_t *payload,
                    size_t len, int *code, int *more)
{
    Ttrpc__Request req = TTRPC__REQUEST__INIT;
    struct rv_bytes out = { 0 };
    struct rv_ttrpc_msg m;
    struct rv_error err;
    req.service = (char *)RV_NRI_SERVICE_PLUGIN;
    req.method = (char *)method;
    req.payload.data = (uint8_t *)payload;
    req.payload.len = len;
    size_t n = ttrpc__request__get_packed_size(&req);
    uint8_t *buf = malloc(n);
    ttrpc__request__pack(&req, buf);
    int r = rv_mux_put(&out, RV_MUX_PLUGIN, stream, RV_TTRPC_REQUEST, 1, buf, n, &err);
    free(buf);
    if (r == 0 && write(fd, out.p, out.len) != (ssize_t)out.len)
        r = -1;
    rv_bytes_free(&out);
    if (r < 0 || read_msg(fd, in, RV_MUX_PLUGIN, &m) != 1 || m.stream != stream)
        return -1;
    Ttrpc__Response *resp = ttrpc__response__unpack(NULL, m.len, m.data);
    if (!resp)
        return -1;
    *code = resp->status ? resp->status->code : 0;
    Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr =
        nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, resp->payload.len, resp->payload.data);
    *more = sr ? sr->more : -1;
    if (sr)
        nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(sr, NULL);
    ttrpc__response__free_unpacked(resp, NULL);
    return 0;
}

/* A CreateContainer answered with the variables: the plugin still serves */
static bool still_serves(int fd, struct rv_mux_in *in, uint32_t stream)
{
    nri_create_req req = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
    nri_pod pod;
    nri_container c;
    Ttrpc__Response *resp = NULL;
    nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
    nri__pkg__api__v1alpha1__container__init(&c);
    pod.id = "podx";
    pod.runtime_handler = "runc";
    c.id = "fresh1";
    c.pod_sandbox_id = "podx";
    req.pod = &pod;
    req.container = &c;
    if (runtime_call(fd, in, stream, "CreateContainer", &req.base, &resp) < 0)
        return false;
    nri_create_resp *cr = nri__pkg__api__v1alpha1__create_container_response__unpack(NULL, resp->payload.len,
                                                                                      resp->payload.data);
    bool yes = cr && cr->adjust && cr->adjust->n_env > 0;
    if (cr)
        nri__pkg__api__v1alpha1__create_container_response__free_unpacked(cr, NULL);
    ttrpc__response__free_unpacked(resp, NULL);
    return yes;
}

static int count_log(const char *needle)
{
    char line[8192];
    int n = 0;
    FILE *f = fopen(cfg.log_file, "re");
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void test_sync_hostile(void)
{
    char sock[256], trouble[640];
    struct rv_mux_in in;
    Ttrpc__Response *resp = NULL;
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf;
    struct rv_error err;
    struct stat st;

    pid_t sleeper = fork();
    if (sleeper == 0) {
        alarm(60);
        pause();
        _exit(0);
    }
    snprintf(sock, sizeof(sock), "%s/hostile.sock", tmp);
    int lfd = listen_at(sock);
    pid_t pid = plugin_start(sock);
    conf_init(&conf, 2000);

    /* 1. the runtime closes right after Configure (its split failed before a
     * message went out), twice: warn, counted, backed off, doubling */
    int closes0 = count_log("NRI: the runtime closed the connection during Synchronize");
    long t[3];
    for (int i = 0; i < 2; i++) {
        int fd = accept_register(lfd, &in);
        ok(fd >= 0 && runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0,
           "registration %d: configured, then closed before any Synchronize", i + 1);
        ttrpc__response__free_unpacked(resp, NULL);
        close(fd);
        rv_mux_in_free(&in);
        t[i] = rv_now_ms();
        char want[32];
        snprintf(want, sizeof(want), " %d times in a row", i + 1);
        for (int k = 0; k < 80 && !(rv_nri_sync_trouble(&cfg, sock, trouble, sizeof(trouble)) == 1 &&
                                    strstr(trouble, want)); k++)
            usleep(25000);
    }
    ok(rv_nri_sync_trouble(&cfg, sock, trouble, sizeof(trouble)) == 1 && strstr(trouble, "2 times in a row"),
       "the instance's status, as doctor and node ready read it: %s", trouble);
    int fd = accept_register(lfd, &in);
    t[2] = rv_now_ms();
    ok(fd >= 0 && t[2] - t[1] >= 500 && t[1] - t[0] < 2000, "the third registration waited the doubled backoff (%ld ms; 300 ms, then 600)",
       t[2] - t[1]);
    ok(count_log("NRI: the runtime closed the connection during Synchronize") - closes0 == 2 &&
       count_log("warn resview-nri") > 0, "each said at warn, with the runtime's likely reason");
    ok(log_line_has("during Synchronize", "failed to synchronize plugin with split messages"),
       "…naming containerd's split failure");

    /* 2. a split closed in the middle: what came is healed */
    struct sync_c c[2];
    nri_container *cp[2] = { &c[0].c, &c[1].c };
    nri_pod pod, *podp = &pod;
    nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
    pod.id = "pod1";
    pod.runtime_handler = "runc";
    sync_container(&c[0], "midsplit1", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    sync_container(&c[1], "midsplit2", sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest part = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    part.pods = &podp;
    part.n_pods = 1;
    part.containers = cp;
    part.n_containers = 1;
    part.more = 1;
    ok(runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0, "configured");
    ttrpc__response__free_unpacked(resp, NULL);
    Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr = NULL;
    ok(runtime_call(fd, &in, 3, "Synchronize", &part.base, &resp) == 0 &&
       (sr = nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, resp->payload.len, resp->payload.data)) &&
       sr->more, "a first message (more): answered at once, more echoed");
    if (sr)
        nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(sr, NULL);
    ttrpc__response__free_unpacked(resp, NULL);
    part.pods = NULL;
    part.n_pods = 0;
    part.containers = cp + 1;
    ok(runtime_call(fd, &in, 5, "Synchronize", &part.base, &resp) == 0, "a second (more)");
    ttrpc__response__free_unpacked(resp, NULL);
    close(fd);   /* and the runtime gives up */
    rv_mux_in_free(&in);
    bool healed = false;
    for (int i = 0; i < 200 && !healed; i++) {
        usleep(50000);
        healed = rv_state_stat(&cfg, "midsplit1", RV_NRI_SYNC_FILE, &st) == 0 &&
                 rv_state_stat(&cfg, "midsplit2", RV_NRI_SYNC_FILE, &st) == 0;
    }
    ok(healed, "closed mid-split: the containers of the messages that came get their views (and the note)");
    ok(log_line_has("during Synchronize (", "2 messages answered, naming 2 containers"),
       "the warning says what came (2 messages, 2 containers)");

    /* 3. malformed, truncated, many, duplicated: each answered, the plugin serves after */
    fd = accept_register(lfd, &in);
    ok(fd >= 0 && runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0, "registered again");
    ttrpc__response__free_unpacked(resp, NULL);
    uint32_t stream = 3;
    int code = -1, more = -1, answered = 0;
    static const uint8_t garbage[] = { 0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3 };   /* a container of 4 GiB */
    answered += raw_call(fd, &in, stream, "Synchronize", garbage, sizeof(garbage), &code, &more) == 0 && code == 0 &&
                more == 0;
    stream += 2;
    /* a real message cut at every length: nothing read past it */
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest whole = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    whole.pods = &podp;
    whole.n_pods = 1;
    whole.containers = cp;
    whole.n_containers = 2;
    whole.more = 1;
    size_t wl = nri__pkg__api__v1alpha1__synchronize_request__get_packed_size(&whole);
    uint8_t *wb = malloc(wl);
    nri__pkg__api__v1alpha1__synchronize_request__pack(&whole, wb);
    int cuts = 0;
    for (size_t cut = 0; cut < wl; cut += 7, stream += 2)
        cuts += raw_call(fd, &in, stream, "Synchronize", wb, cut, &code, &more) == 0 && code == 0;
    free(wb);
    ok(answered == 1 && cuts == (int)((wl + 6) / 7), "a container of 4 GiB (answered OK, more: no) and %d cuts of a "
       "message: each answered OK", cuts);
    /* many split messages: 300, each naming the same 2 containers (more) */
    int many = 0;
    for (int i = 0; i < 300; i++, stream += 2) {
        Ttrpc__Response *r2 = NULL;
        many += runtime_call(fd, &in, stream, "Synchronize", &whole.base, &r2) == 0;
        if (r2)
            ttrpc__response__free_unpacked(r2, NULL);
    }
    whole.more = 0;
    whole.n_containers = 0;
    Ttrpc__Response *r3 = NULL;
    many += runtime_call(fd, &in, stream, "Synchronize", &whole.base, &r3) == 0;
    stream += 2;
    if (r3)
        ttrpc__response__free_unpacked(r3, NULL);
    ok(many == 301, "300 split messages then the last: each answered (%d)", many);
    for (int i = 0; i < 60 && !log_has("some ids named twice: left alone"); i++)
        usleep(50000);
    ok(log_has("some ids named twice: left alone"), "ids named more than once: left alone, said");
    /* tenants' environments: 65,000 variables each, an opt-out as the last
     * of one, split as containerd splits them */
    enum { BIG = 12, VARS = 65000 };
    static char pool[VARS][16];
    static char *env[VARS + 1];
    struct sync_c big[BIG];
    nri_container *bp[BIG];
    char ids[BIG][16];
    for (int i = 0; i < VARS; i++) {
        snprintf(pool[i], sizeof(pool[i]), "V%05d=%05d", i, i);
        env[i] = pool[i];
    }
    env[VARS] = "RESVIEW_LXCFS=0";
    for (int i = 0; i < BIG; i++) {
        snprintf(ids[i], sizeof(ids[i]), "big%d", i);
        sync_container(&big[i], ids[i], sleeper, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
        big[i].c.env = env;
        big[i].c.n_env = VARS + (i == 0);
        bp[i] = &big[i].c;
    }
    double ms;
    size_t bytes;
    int msgs = sync_split(fd, &in, &stream, &podp, 1, bp, BIG, &ms, &bytes);
    ok(msgs == 3, "%d containers of %d variables (%.1f MiB) split as containerd splits them: %d messages, "
       "answered in %.0f ms", BIG, VARS, (double)bytes / (1 << 20), msgs, ms);
    bool given = false;
    for (int i = 0; i < 100 && !given; i++) {
        usleep(50000);
        given = rv_state_stat(&cfg, "big1", RV_NRI_SYNC_FILE, &st) == 0 &&
                rv_state_stat(&cfg, "big11", RV_NRI_SYNC_FILE, &st) == 0;
    }
    ok(given && !rv_state_exists(&cfg, "big0"), "…each given its views but the one whose 65,001st variable "
       "opts out");
    ok(still_serves(fd, &in, stream), "then a CreateContainer: answered with the variables");
    stream += 2;
    ok(rv_nri_sync_trouble(&cfg, sock, trouble, sizeof(trouble)) == 0,
       "a Synchronize completed: no trouble in the status any more");
    (void)err;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    close(fd);
    rv_mux_in_free(&in);
    close(lfd);
}

/* ---- the fake runtime of e2e 57 ---- */

static int fake_runtime(const char *arg)
{
    char sock[256], id[128], cgpath[256], line[160];
    int pid = 0;
    uint32_t stream = 1;
    struct rv_mux_in in;
    Ttrpc__Response *resp = NULL;
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf;

    if (sscanf(arg, "%255s %127s %d %255s", sock, id, &pid, cgpath) != 4)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int lfd = listen_at(sock), fd = -1;
    if (lfd < 0)
        return 1;
    printf("listening\n");
    while (fgets(line, sizeof(line), stdin)) {
        if (strncmp(line, "accept", 6) == 0) {
            /* a (re-)registration: Configure, then Synchronize naming the container */
            Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
            nri_pod pod, *podp = &pod;
            struct sync_c c;
            nri_container *cp = &c.c;
            nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
            pod.id = "pod1";
            pod.runtime_handler = "runc";
            sync_container(&c, id, pid, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING);
            c.lin.cgroups_path = cgpath;
            sync.pods = &podp;
            sync.n_pods = 1;
            sync.containers = &cp;
            sync.n_containers = 1;
            conf_init(&conf, 2000);   /* containerd's default */
            stream = 1;
            /* doctor's probes connected meanwhile, and closed: not the plugin */
            for (int i = 0; i < 20 && (fd = accept_register(lfd, &in)) < 0; i++)
                rv_mux_in_free(&in);
            if (fd < 0 || runtime_call(fd, &in, stream, "Configure", &conf.base, &resp) < 0)
                return 1;
            ttrpc__response__free_unpacked(resp, NULL);
            stream += 2;
            long t0 = rv_now_ms();
            if (runtime_call(fd, &in, stream, "Synchronize", &sync.base, &resp) < 0)
                return 1;
            ttrpc__response__free_unpacked(resp, NULL);
            stream += 2;
            printf("synchronized in %ld ms\n", rv_now_ms() - t0);
        } else if (strncmp(line, "sync-fail", 9) == 0) {
            /* a registration closed during Synchronize, as containerd does
             * when its split fails: Configure, then the connection closed */
            for (int i = 0; i < 20 && (fd = accept_register(lfd, &in)) < 0; i++)
                rv_mux_in_free(&in);
            conf_init(&conf, 1000);
            if (fd < 0 || runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) < 0)
                return 1;
            ttrpc__response__free_unpacked(resp, NULL);
            close(fd);
            rv_mux_in_free(&in);
            fd = -1;
            printf("sync failed\n");
        } else if (strncmp(line, "call", 4) == 0) {
            /* a call, not waited for (the plugin may be stopped) */
            if (send_call(fd, stream, "Shutdown", NULL) < 0)
                return 1;
            stream += 2;
            printf("called\n");
        } else if (strncmp(line, "create ", 7) == 0) {
            /* CreateContainer of a runc pod's container: how many hooks
             * its adjustment carries */
            char cid[64];
            nri_create_req req = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
            nri_pod pod;
            struct sync_c c;
            if (sscanf(line + 7, "%63s", cid) != 1)
                return 2;
            nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
            pod.id = "pod1";
            pod.runtime_handler = "runc";
            sync_container(&c, cid, 0, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_CREATED);
            c.lin.cgroups_path = cgpath;
            req.pod = &pod;
            req.container = &c.c;
            if (runtime_call(fd, &in, stream, "CreateContainer", &req.base, &resp) < 0)
                return 1;
            stream += 2;
            nri_create_resp *cr = nri__pkg__api__v1alpha1__create_container_response__unpack(
                NULL, resp->payload.len, resp->payload.data);
            const Nri__Pkg__Api__V1alpha1__Hooks *h = cr && cr->adjust ? cr->adjust->hooks : NULL;
            printf("created %s hooks=%zu\n", cid, h ? h->n_prestart + h->n_create_runtime : 0);
            if (cr)
                nri__pkg__api__v1alpha1__create_container_response__free_unpacked(cr, NULL);
            ttrpc__response__free_unpacked(resp, NULL);
        } else if (strncmp(line, "start ", 6) == 0 || strncmp(line, "remove ", 7) == 0) {
            /* StateChange: the container's start (with its pid) or removal,
             * timed as the runtime waits for it */
            char cid[64];
            int cpid = 0;
            bool start = line[0] == 's';
            Nri__Pkg__Api__V1alpha1__StateChangeEvent ev = NRI__PKG__API__V1ALPHA1__STATE_CHANGE_EVENT__INIT;
            nri_pod pod;
            struct sync_c c;
            if (sscanf(line + (start ? 6 : 7), "%63s %d", cid, &cpid) < 1)
                return 2;
            nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
            pod.id = "pod1";
            pod.runtime_handler = "runc";
            sync_container(&c, cid, cpid, NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_CREATED);
            ev.event = start ? NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER
                             : NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_CONTAINER;
            ev.pod = &pod;
            ev.container = &c.c;
            long t0 = rv_now_ms();
            if (runtime_call(fd, &in, stream, "StateChange", &ev.base, &resp) < 0)
                return 1;
            stream += 2;
            printf("%s %s in %ld ms, code %d\n", start ? "started" : "removed", cid, rv_now_ms() - t0,
                   resp->status ? resp->status->code : 0);
            ttrpc__response__free_unpacked(resp, NULL);
        } else if (strncmp(line, "close", 5) == 0) {
            close(fd);
            rv_mux_in_free(&in);
            fd = -1;
            printf("closed\n");
        }
    }
    return 0;
}

int main(void)
{
    if (getenv("RESVIEW_NRI_FAKE"))
        return fake_runtime(getenv("RESVIEW_NRI_FAKE"));
    if (!mkdtemp(tmp))
        return 1;
    signal(SIGPIPE, SIG_IGN);
    rv_nri_sync_backoff_ms = 300;
    rv_config_defaults(&cfg);
    strcpy(cfg.hook_path, "/bin/true");
    strcpy(cfg.hook_stage, "prestart");
    snprintf(cfg.log_file, sizeof(cfg.log_file), "%s/log", tmp);
    snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", tmp);
    snprintf(cfg.lxcfs_root, sizeof(cfg.lxcfs_root), "%s/no-lxcfs", tmp);
    rv_log_init("nri", &cfg);

    test_lock();
    test_plugin();
    test_sync();
    test_sync_hostile();

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        printf("# cannot remove %s\n", tmp);
    return unit_done();
}
