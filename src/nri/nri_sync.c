/* nri_sync.c - Synchronize: at each registration the runtime names every
 * pod and container it has. A container created while no plugin of ours was
 * registered started bare: no variables (they can only be given at create)
 * and no views. Each running one that resview serves (the same decision as
 * at CreateContainer: rv_nri_adjust, its pod's runtime handler and the
 * opt-outs included) and that has no
 * record gets a views record (as the hook writes it, naming the process, its
 * mount namespace and its root) and repair attaches the views (repair.c:
 * the process pinned by its start time, the views resolved inside its root
 * by the injector, in bounded children). That work, the decision included,
 * runs in a child of the plugin once the last answer is sent, so the
 * runtime never waits for it, nor do the calls that follow. Each such
 * container is said once: in the log, and in a file RV_NRI_SYNC_FILE of its
 * record that doctor lists.
 *
 * The messages carry every container's whole environment (a tenant's can be
 * 65,000 variables, some MiB; the runtime splits them into messages of at
 * most 4 MiB, and its 2 s budget covers them all): each is read from the
 * wire as it comes, never held whole (no protobuf unpack): the plugin
 * receives it into a window of 256 KiB that stays in cache from the
 * kernel's copy to this reading (half the kernel's time of a copy into 4 MiB
 * of fresh memory), and the reader below takes each piece at once,
 * resumable at any byte: the offsets of the nesting (Request, payload, pod
 * or container, annotation entry) are the message's, what it skips is
 * skipped by count across pieces, and only an atom (a field's key and
 * length, and the first bytes it keeps of it, ATOM_MAX at most) that a
 * piece's end cuts is carried to the next. It keeps only what the decision
 * reads (below); the message is answered once it has come. A message that
 * came whole (read first, or not in Go's order) is read by the same reader
 * in one piece. Bounded: SYNC_MAX containers, SYNC_PODS_MAX pods,
 * fixed-size fields, whatever the messages' sizes. */
#define _GNU_SOURCE
#include "nri_msg.h"
#include "resview/envvars.h"
#include "resview/fuse.h"
#include "resview/hook.h"
#include "resview/inject.h"
#include "resview/log.h"
#include "resview/metrics.h"
#include "resview/proc.h"
#include "resview/repair.h"
#include "resview/spec.h"
#include "resview/state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#define SYNC_MAX 4096        /* containers kept per synchronization (the rest counted) */
#define SYNC_PODS_MAX 4096   /* pods kept per synchronization */
#define SYNC_VAL 64          /* a request's value kept; a longer one is neither yes nor no */

/* What the decision reads of a container or a pod, and nothing else: the
 * requests (annotations resview.io/lxcfs, env, gomaxprocs, fuse; the
 * container's variables RESVIEW_LXCFS, _ENV, _GOMAXPROCS, _FUSE) whose
 * validity and value rv_nri_adjust weighs. */
enum { REQ_LXCFS, REQ_ENV, REQ_GOMAXPROCS, REQ_FUSE, REQ_N };
static const char *const req_ann[REQ_N] = { RV_ANN_LXCFS, RV_ANN_ENV, RV_ANN_GOMAXPROCS, RV_ANN_FUSE };
static const char *const req_env[REQ_N] = { "RESVIEW_LXCFS", "RESVIEW_ENV", RV_ENV_GOMAXPROCS, "RESVIEW_FUSE" };

struct sync_req {
    char v[REQ_N][SYNC_VAL];
    unsigned has;   /* bit i: request i present */
};

struct sync_pod {
    char id[128], handler[128];
    struct sync_req ann;
    bool bad;       /* an id or handler too long, or with a NUL: matches nothing */
};

struct sync_one {
    char id[128], pod[128];
    uint32_t pid;
    int state;
    struct sync_req ann, env;
    bool bad;       /* an id too long or with a NUL, or named twice */
};

/* A field's first bytes kept, the rest skipped: an id or handler's (as
 * sizeof(id): a longer one is bad either way), a variable's (the longest
 * request's name, '=' and SYNC_VAL), an annotation's key (longer than any
 * request's) and value. */
#define KEEP_ID 128
#define KEEP_ENV 96
#define KEEP_KEY 64
#define KEEP_SVC 32
/* An atom: a field's key and length (10 bytes each at most) and the first
 * bytes of it kept; one cut by the end of a piece is carried to the next. */
#define ATOM_MAX (2 * 10 + KEEP_ID)

/* The nesting the reader is in: the ttrpc Request (a message read as it
 * comes), its payload (the SynchronizeRequest), a pod or a container, an
 * annotation entry. */
enum { L_REQ, L_SYNC, L_ITEM, L_ANN, L_N };

/* One message being read, resumable at any byte: the offsets are the
 * message's own, so a piece may end anywhere. What it names is staged past
 * the lists' committed entries (n, n_pods) until the message has come whole
 * and is a Synchronize. */
struct sync_rd {
    uint64_t at;              /* the next byte's offset */
    uint64_t end[L_N];        /* each open level's end */
    uint64_t skip_to;         /* a field's bytes not kept, skipped up to there */
    int lvl, top;             /* the innermost open level; the message's */
    bool scan;                /* the bytes skipped are "more"'s: protobuf-c reads any of them */
    bool is_pod;              /* the item is a pod, else a container */
    struct sync_pod pod;
    struct sync_one c;
    struct {                  /* the annotation entry: the last key and value */
        uint8_t key[KEEP_KEY], val[SYNC_VAL];
        uint64_t key_len, val_len;
        bool has_key;
    } ann;
    bool svc, method, bad;    /* the Request names Plugin's service, Synchronize; is malformed */
    bool more;
    int r;                    /* the payload's fault: -1 malformed, -2 out of memory */
    uint64_t payload_len;
    size_t n, n_pods, over;   /* staged */
    uint8_t carry[2 * ATOM_MAX];   /* an atom cut by a piece's end */
    size_t carry_len;
};

struct rv_nri_sync {
    struct sync_pod *pods;
    size_t n_pods, cap_pods;
    struct sync_one *c;
    size_t n, cap;
    size_t msgs, over, bytes;   /* messages, containers and pods beyond the caps, bytes read */
    bool done;                  /* its last message came */
    struct sync_rd rd;
};

/* A string field as protobuf-c's C string has it (up to its first NUL);
 * false when it does not fit (then dst is ""). len: its first bytes (at
 * least size of them, when it has that many: the answer is the same). */
static bool take_str(char *dst, size_t size, const uint8_t *data, uint64_t len)
{
    const uint8_t *nul = memchr(data, 0, (size_t)len);
    size_t n = nul ? (size_t)(nul - data) : (size_t)len;

    dst[0] = '\0';
    if (n >= size)
        return false;
    memcpy(dst, data, n);
    dst[n] = '\0';
    return !nul;
}

/* len: at least SYNC_VAL - 1 of its bytes, when it has that many */
static void take_val(struct sync_req *r, int i, const uint8_t *data, uint64_t len)
{
    /* cut at SYNC_VAL - 1: a value that long is no valid request either way */
    const uint8_t *nul = memchr(data, 0, (size_t)len);
    size_t n = nul ? (size_t)(nul - data) : (size_t)len;

    n = n < SYNC_VAL - 1 ? n : SYNC_VAL - 1;
    memcpy(r->v[i], data, n);
    r->v[i][n] = '\0';
    r->has |= 1u << i;
}

/* A variable "NAME=value" whose name starts RESVIEW_: the first of a
 * request's name counts (rv_env_get). len: its first KEEP_ENV bytes at
 * least, when it has that many. */
static void take_env(struct sync_req *r, const uint8_t *kv, uint64_t len)
{
    for (int i = 0; i < REQ_N; i++) {
        size_t n = strlen(req_env[i]);
        if (len > n && kv[n] == '=' && memcmp(kv, req_env[i], n) == 0 && !(r->has & (1u << i)))
            take_val(r, i, kv + n + 1, len - n - 1);
    }
}

/* Wire type 2 for a field that must be one: protobuf-c refuses another */
#define LEN_FIELD(f) ((uint64_t)(f) << 3 | 2)
#define WT(k) ((k) & 7)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* The end of a map<string, string> entry: a request's annotation kept (the
 * last of a key wins, as in protobuf's maps). */
static void ann_done(struct sync_rd *d)
{
    struct sync_req *r = d->is_pod ? &d->pod.ann : &d->c.ann;

    for (int i = 0; d->ann.has_key && i < REQ_N; i++)
        if (d->ann.key_len == strlen(req_ann[i]) && memcmp(d->ann.key, req_ann[i], d->ann.key_len) == 0)
            take_val(r, i, d->ann.val, MIN(d->ann.val_len, SYNC_VAL));
}

/* Room for one more past the committed and the staged (*cap grown). */
static void *room_for(void *list, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap : 64;

    if (need <= *cap)
        return list;
    while (c < need)
        c *= 2;
    void *n = realloc(list, c * size);
    if (n)
        *cap = c;
    return n;
}

/* The end of a pod or container: staged, or counted beyond the caps (the
 * caps count this synchronization's: none of a done one's). -2 out of memory. */
static int item_done(struct rv_nri_sync *s)
{
    struct sync_rd *d = &s->rd;

    if (d->is_pod) {
        if ((s->done ? 0 : s->n_pods) + d->n_pods == SYNC_PODS_MAX) {
            d->over++;
            return 0;
        }
        struct sync_pod *l = room_for(s->pods, &s->cap_pods, s->n_pods + d->n_pods + 1, sizeof(*l));
        if (!l)
            return -2;
        s->pods = l;
        l[s->n_pods + d->n_pods++] = d->pod;
    } else {
        if ((s->done ? 0 : s->n) + d->n == SYNC_MAX) {
            d->over++;
            return 0;
        }
        struct sync_one *l = room_for(s->c, &s->cap, s->n + d->n + 1, sizeof(*l));
        if (!l)
            return -2;
        s->c = l;
        l[s->n + d->n++] = d->c;
    }
    return 0;
}

static void descend(struct sync_rd *d, uint64_t end)
{
    d->end[++d->lvl] = end;
}

/* The payload is no more read (a fault: what came before it is kept, not
 * the item it is in); a fault in the Request around it makes it none. */
static void fault(struct sync_rd *d, int r)
{
    if (d->lvl == L_REQ) {
        d->bad = true;
    } else {
        d->r = d->r ? d->r : r;
        d->lvl = L_SYNC;
    }
    d->skip_to = d->end[d->lvl];
    d->scan = false;
}

/* What became of a field (or of its key or length: F_CUT), -1 malformed */
enum { F_READ, F_DOWN, F_CUT };

/* One field at the reader's level: its key k, its value v (wire type 0) or
 * its content's first avail bytes data (len in all; of a fixed one, its
 * size; content its offset), key_end where its length starts. F_READ (its
 * content is skipped), F_DOWN (descended into it), F_CUT (its first bytes
 * kept are not all in this piece), -1. */
static int field(struct rv_nri_sync *s, uint64_t k, uint64_t v, const uint8_t *key_end,
                 const uint8_t *data, size_t avail, uint64_t len, uint64_t content)
{
    struct sync_rd *d = &s->rd;
    unsigned f = (unsigned)(k >> 3);
#define KEEP(w) do { if (avail < MIN(len, (uint64_t)(w))) return F_CUT; } while (0)

    switch (d->lvl) {
    case L_REQ:
        if (f >= 1 && f <= 3 && WT(k) != 2)
            return -1;   /* a wire type protobuf-c refuses */
        if (f == 1 || f == 2) {
            KEEP(KEEP_SVC);
            const char *want = f == 1 ? RV_NRI_SERVICE_PLUGIN : "Synchronize";
            bool is = len == strlen(want) && memcmp(data, want, len) == 0;
            *(f == 1 ? &d->svc : &d->method) = is;
        } else if (f == 3) {
            /* the last payload is the message's: what an earlier one named is dropped */
            d->n = d->n_pods = d->over = 0;
            d->more = false;
            d->r = 0;
            d->payload_len = len;
            descend(d, content + len);
            return F_DOWN;
        }
        return F_READ;
    case L_SYNC:
        if ((f == 1 || f == 2) && WT(k) != 2)
            return -1;
        if (f == 1 || f == 2) {
            d->is_pod = f == 1;
            memset(&d->pod, 0, sizeof(d->pod));
            memset(&d->c, 0, sizeof(d->c));
            descend(d, content + len);
            return F_DOWN;
        }
        if (k == (3 << 3 | 0)) {
            d->more = v != 0;
        } else if (f == 3) {
            /* another wire type: protobuf-c takes any byte of it (its
             * length's included) with a bit of 0x7f set as true */
            d->more = false;
            for (const uint8_t *b = key_end; b < data; b++)
                d->more |= (*b & 0x7f) != 0;
            d->scan = true;
        }
        return F_READ;
    case L_ITEM:
        if (f == 6) {
            if (WT(k) != 2)
                return -1;
            memset(&d->ann, 0, sizeof(d->ann));
            descend(d, content + len);
            return F_DOWN;
        }
        if (d->is_pod) {
            if ((f == 1 || f == 7) && WT(k) != 2)
                return -1;
            if (f == 1 || f == 7) {
                KEEP(KEEP_ID);
                d->pod.bad |= !take_str(f == 1 ? d->pod.id : d->pod.handler, KEEP_ID, data, MIN(len, KEEP_ID));
            }
            return F_READ;
        }
        if ((f == 1 || f == 2 || f == 8) && WT(k) != 2)
            return -1;
        if ((f == 4 || f == 12) && WT(k) != 0) {
            /* protobuf-c reads some number of it: no state, no pid we act on */
            if (f == 4)
                d->c.state = 0;
            else
                d->c.pid = 0;
        } else if (f == 1 || f == 2) {
            KEEP(KEEP_ID);
            bool ok = take_str(f == 1 ? d->c.id : d->c.pod, KEEP_ID, data, MIN(len, KEEP_ID));
            d->c.bad |= f == 1 && !ok;   /* a pod id too long: no pod is found */
        } else if (f == 8) {
            KEEP(KEEP_ENV);
            if (len > 8 && memcmp(data, "RESVIEW_", 8) == 0)
                take_env(&d->c.env, data, MIN(len, KEEP_ENV));
        } else if (f == 4) {
            d->c.state = (int)(int32_t)v;
        } else if (f == 12) {
            d->c.pid = (uint32_t)v;
        }
        return F_READ;
    default:   /* L_ANN */
        if (k == LEN_FIELD(1)) {
            KEEP(KEEP_KEY);
            memcpy(d->ann.key, data, MIN(len, KEEP_KEY));
            d->ann.key_len = len;
            d->ann.has_key = true;
        } else if (k == LEN_FIELD(2)) {
            KEEP(SYNC_VAL);
            memcpy(d->ann.val, data, MIN(len, SYNC_VAL));
            d->ann.val_len = len;
        }
        return F_READ;
    }
#undef KEEP
}

/* A varint at *q before lim: F_READ (*q past it), -1 malformed, F_CUT (lim
 * is the piece's end, before the level's: it may end in the next). */
static int varint(const uint8_t **q, const uint8_t *lim, bool cut, uint64_t *v)
{
    const uint8_t *at = *q;

    if (rv_pb_varint(q, lim, v) == 0)
        return F_READ;
    return cut && lim - at < 10 ? F_CUT : -1;
}

/* Containers' variables (env, 8), tens of thousands of them, each whole in
 * the piece: a tight loop (key and a one-byte length read together: one
 * load on the path from a variable to the next), each one looked at only
 * when it may be a request. The first byte not read. */
static const uint8_t *env_run(struct sync_one *c, const uint8_t *q, const uint8_t *lim)
{
    while (lim - q >= 2 && q[0] == 0x42 && q[1] < 0x80 && q[1] <= lim - q - 2) {
        const uint8_t *kv = q + 2;
        size_t n = q[1];
        if (__builtin_expect(n > 8 && kv[0] == 'R', 0) && memcmp(kv, "RESVIEW_", 8) == 0)
            take_env(&c->env, kv, n);
        q = kv + n;
    }
    return q;
}

/* Reads what it can of a piece (its first byte at offset d->at): the bytes
 * used. It stops short only at an atom the piece's end cuts (fewer than
 * ATOM_MAX bytes left), or at the message's end. */
static size_t parse(struct rv_nri_sync *s, const uint8_t *buf, size_t n)
{
    struct sync_rd *d = &s->rd;
    const uint8_t *q = buf, *pend = buf + n;

    for (;;) {
        uint64_t at = d->at + (uint64_t)(q - buf), end = d->end[d->lvl];
        if (d->skip_to > at) {
            size_t k = (size_t)MIN(d->skip_to - at, (uint64_t)(pend - q));
            if (k == 0)
                break;
            for (size_t i = 0; d->scan && i < k; i++)
                d->more |= (q[i] & 0x7f) != 0;
            q += k;
            continue;
        }
        d->scan = false;
        if (at == end) {   /* a level ends */
            int r = 0;
            if (d->lvl == d->top) {
                d->at = end;
                return n;   /* the message's end: nothing of it follows */
            }
            if (d->lvl == L_ANN)
                ann_done(d);
            else if (d->lvl == L_ITEM)
                r = item_done(s);
            if (r < 0)
                fault(d, r);
            else
                d->lvl--;
            continue;
        }
        if (q == pend)
            break;
        bool cut = end - at > (uint64_t)(pend - q);
        const uint8_t *lim = cut ? pend : q + (end - at), *h = q, *key_end;
        if (d->lvl == L_ITEM && !d->is_pod && *q == 0x42) {
            h = env_run(&d->c, q, lim);
            if (h != q) {
                q = h;
                continue;
            }
        }
        uint64_t k, v = 0, len = 0;
        int rc = varint(&h, lim, cut, &k);
        key_end = h;
        if (rc == 0) {
            switch (WT(k)) {
            case 0:
                rc = varint(&h, lim, cut, &v);
                break;
            case 1:
            case 5:
                len = WT(k) == 1 ? 8 : 4;
                break;
            case 2:
                rc = varint(&h, lim, cut, &len);
                break;
            default:
                rc = -1;   /* groups: protobuf-c has none */
            }
        }
        uint64_t content = at + (uint64_t)(h - q);
        if (rc == 0 && len > end - content)
            rc = -1;
        if (rc == 0)
            rc = field(s, k, v, key_end, h, (size_t)(pend - h), len, content);
        if (rc == F_CUT)
            break;   /* carried to the next piece */
        if (rc < 0) {
            fault(d, -1);
            continue;
        }
        if (rc == F_READ)
            d->skip_to = content + len;
        q = h;
    }
    d->at += (uint64_t)(q - buf);
    return (size_t)(q - buf);
}

static void reader_begin(struct rv_nri_sync *s, int top, uint64_t len)
{
    memset(&s->rd, 0, sizeof(s->rd));
    s->rd.lvl = s->rd.top = top;
    s->rd.end[top] = len;
    s->rd.payload_len = top == L_SYNC ? len : 0;
}

/* A piece of the message: read where it lies, but for an atom the last one
 * cut (completed here from this one's first bytes) or this one cuts
 * (carried). */
static void reader_feed(struct rv_nri_sync *s, const uint8_t *data, size_t n)
{
    struct sync_rd *d = &s->rd;

    if (d->carry_len) {
        size_t k = MIN(n, sizeof(d->carry) - d->carry_len), used;
        memcpy(d->carry + d->carry_len, data, k);
        used = parse(s, d->carry, d->carry_len + k);
        if (used < d->carry_len) {   /* still cut: this piece was short, it is all carried */
            memmove(d->carry, d->carry + used, d->carry_len + k - used);
            d->carry_len += k - used;
            return;
        }
        data += used - d->carry_len;
        n -= used - d->carry_len;
        d->carry_len = 0;
    }
    size_t used = parse(s, data, n);
    memcpy(d->carry, data + used, n - used);
    d->carry_len = n - used;
}

/* The message has come: what it named joins the synchronization's (a done
 * one's lists are done with: a new synchronization starts), and is
 * answered with more. */
static int reader_end(struct rv_nri_plugin *p, bool *more)
{
    struct rv_nri_sync *s = p->sync;
    struct sync_rd *d = &s->rd;

    if (s->done) {
        if (d->n)
            memmove(s->c, s->c + s->n, d->n * sizeof(*s->c));
        if (d->n_pods)
            memmove(s->pods, s->pods + s->n_pods, d->n_pods * sizeof(*s->pods));
        s->n = s->n_pods = s->over = s->msgs = s->bytes = 0;
        s->done = false;
    }
    s->n += d->n;
    s->n_pods += d->n_pods;
    s->over += d->over;
    s->msgs++;
    s->bytes += d->payload_len;
    /* the message is answered whatever it holds; what it names is kept as
     * it is read (a message cut short keeps what came before the cut) */
    *more = d->r == 0 && d->more;   /* no more of a broken synchronization: decide on what came */
    if (!*more) {
        s->done = true;
        p->sync_ready = s->n > 0;
        if (p->status) {   /* a registration completed: the runtime synchronizes us */
            p->status->sync_closed = 0;
            p->status->retry_ms = 0;
        }
    }
    if (p->status) {
        p->status->sync_msgs = (uint32_t)s->msgs;
        p->status->sync_containers = (uint32_t)(s->n + s->over);
    }
    return d->r;
}

static int sync_of(struct rv_nri_plugin *p)
{
    return p->sync || (p->sync = calloc(1, sizeof(*p->sync))) ? 0 : -2;
}

int rv_nri_sync_take(struct rv_nri_plugin *p, const uint8_t *buf, size_t len, bool *more)
{
    *more = false;
    if (sync_of(p) < 0)
        return -2;
    reader_begin(p->sync, L_SYNC, len);
    if (len)
        parse(p->sync, buf, len);   /* whole: nothing is cut */
    return reader_end(p, more);
}

int rv_nri_sync_stream_begin(struct rv_nri_plugin *p, size_t len)
{
    if (sync_of(p) < 0)
        return -2;
    reader_begin(p->sync, L_REQ, len);
    return 0;
}

void rv_nri_sync_stream(void *plugin, const uint8_t *data, size_t n)
{
    reader_feed(((struct rv_nri_plugin *)plugin)->sync, data, n);
}

int rv_nri_sync_stream_end(struct rv_nri_plugin *p, bool *more, size_t *len)
{
    struct sync_rd *d = &p->sync->rd;

    *more = false;
    *len = (size_t)d->payload_len;
    if (d->bad || !d->svc || !d->method || d->carry_len || d->lvl != L_REQ ||
        d->at < d->end[L_REQ] || d->skip_to > d->at)
        return -3;
    return reader_end(p, more);
}

bool rv_nri_sync_pending(const struct rv_nri_plugin *p, size_t *msgs, size_t *containers, size_t *bytes)
{
    const struct rv_nri_sync *s = p->sync;

    *msgs = s ? s->msgs : 0;
    *containers = s ? s->n + s->over : 0;
    *bytes = s ? s->bytes : 0;
    return p->configured && !(s && s->done);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)data)[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t req_digest(uint64_t h, const struct sync_req *r)
{
    h = fnv(h, &r->has, sizeof(r->has));
    for (int i = 0; i < REQ_N; i++)
        if (r->has & (1u << i))
            h = fnv(h, r->v[i], strlen(r->v[i]) + 1);
    return h;
}

uint64_t rv_nri_sync_digest(const struct rv_nri_plugin *p)
{
    const struct rv_nri_sync *s = p->sync;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t counts[5];

    if (!s)
        return h;
    for (size_t i = 0; i < s->n_pods; i++) {
        const struct sync_pod *o = &s->pods[i];
        h = fnv(h, o->id, strlen(o->id) + 1);
        h = fnv(h, o->handler, strlen(o->handler) + 1);
        h = fnv(h, &o->bad, sizeof(o->bad));
        h = req_digest(h, &o->ann);
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct sync_one *o = &s->c[i];
        h = fnv(h, o->id, strlen(o->id) + 1);
        h = fnv(h, o->pod, strlen(o->pod) + 1);
        h = fnv(h, &o->pid, sizeof(o->pid));
        h = fnv(h, &o->state, sizeof(o->state));
        h = fnv(h, &o->bad, sizeof(o->bad));
        h = req_digest(req_digest(h, &o->ann), &o->env);
    }
    memcpy(counts, (size_t[]){ s->n_pods, s->n, s->over, s->msgs, s->bytes }, sizeof(counts));
    h = fnv(h, counts, sizeof(counts));
    return fnv(h, &s->done, sizeof(s->done));
}

void rv_nri_sync_end(struct rv_nri_plugin *p)
{
    if (p->sync && !p->sync->done) {
        p->sync->done = true;
        p->sync_ready = p->sync->n > 0;
    }
}

void rv_nri_sync_free(struct rv_nri_plugin *p)
{
    struct rv_nri_sync *s = p->sync;

    if (!s)
        return;
    free(s->pods);
    free(s->c);
    free(s);
    p->sync = NULL;
    p->sync_ready = false;
}

/* ---- the decision, in the child once the last answer is sent ---- */

static int by_pod_id(const void *a, const void *b)
{
    return strcmp(((const struct sync_pod *)a)->id, ((const struct sync_pod *)b)->id);
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct sync_one *)a)->id, ((const struct sync_one *)b)->id);
}

static const struct sync_pod *pod_of(const struct rv_nri_sync *s, const char *id)
{
    struct sync_pod key;

    if (!id[0] || strlen(id) >= sizeof(key.id))
        return NULL;
    strcpy(key.id, id);
    const struct sync_pod *pod = s->n_pods ? bsearch(&key, s->pods, s->n_pods, sizeof(*s->pods), by_pod_id) : NULL;
    /* the first of an id (they are sorted stably enough: any of equal ids
     * is as good, but a bad one is no pod) */
    return pod && !pod->bad ? pod : NULL;
}

/* Whether resview gives c its views: running, a process, and the edit of
 * CreateContainer would (a runtime handler served, not opted out, every
 * request valid, LXCFS on): rv_nri_would_serve on what the messages said. */
static bool served(struct rv_nri_plugin *p, const struct sync_pod *sp, const struct sync_one *o)
{
    const char *ann[2 * REQ_N + 1] = { 0 }, *pod_ann[2 * REQ_N + 1] = { 0 }, *env[REQ_N + 1] = { 0 };
    char kv[REQ_N][SYNC_VAL + 32];
    size_t na = 0, npa = 0, ne = 0;

    if (o->bad || o->state != NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING || !sp)
        return false;
    for (int i = 0; i < REQ_N; i++) {
        if (sp->ann.has & (1u << i)) {
            pod_ann[npa++] = req_ann[i];
            pod_ann[npa++] = sp->ann.v[i];
        }
        if (o->ann.has & (1u << i)) {
            ann[na++] = req_ann[i];
            ann[na++] = o->ann.v[i];
        }
        if (o->env.has & (1u << i)) {
            snprintf(kv[ne], sizeof(kv[ne]), "%s=%s", req_env[i], o->env.v[i]);
            env[ne] = kv[ne];
            ne++;
        }
    }
    const struct rv_nri_seen seen = { .id = o->id, .pod = sp->id, .handler = sp->handler, .pid = o->pid,
                                      .pod_ann = pod_ann, .ann = ann, .env = env };
    return rv_nri_would_serve(p, &seen);
}

#define SEEN_ANN 32
bool rv_nri_would_serve(struct rv_nri_plugin *p, const struct rv_nri_seen *c)
{
    Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry pa[SEEN_ANN], *pap[SEEN_ANN];
    Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ca[SEEN_ANN], *cap[SEEN_ANN];
    nri_pod pod;
    nri_container ctr;
    struct rv_nri_adjustment a;
    struct rv_error err;
    bool yes;

    if (c->pid == 0 || !c->id[0] || !rv_safe_name(c->id))
        return false;
    nri__pkg__api__v1alpha1__pod_sandbox__init(&pod);
    nri__pkg__api__v1alpha1__container__init(&ctr);
    pod.id = (char *)c->pod;
    pod.runtime_handler = (char *)c->handler;
    pod.annotations = pap;
    ctr.id = (char *)c->id;
    ctr.pod_sandbox_id = (char *)c->pod;
    ctr.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
    ctr.pid = c->pid;
    ctr.annotations = cap;
    for (size_t i = 0; c->pod_ann && c->pod_ann[i] && c->pod_ann[i + 1] && i / 2 < SEEN_ANN; i += 2) {
        nri__pkg__api__v1alpha1__pod_sandbox__annotations_entry__init(&pa[i / 2]);
        pa[i / 2].key = (char *)c->pod_ann[i];
        pa[i / 2].value = (char *)c->pod_ann[i + 1];
        pap[pod.n_annotations++] = &pa[i / 2];
    }
    for (size_t i = 0; c->ann && c->ann[i] && c->ann[i + 1] && i / 2 < SEEN_ANN; i += 2) {
        nri__pkg__api__v1alpha1__container__annotations_entry__init(&ca[i / 2]);
        ca[i / 2].key = (char *)c->ann[i];
        ca[i / 2].value = (char *)c->ann[i + 1];
        cap[ctr.n_annotations++] = &ca[i / 2];
    }
    ctr.env = (char **)c->env;
    while (c->env && c->env[ctr.n_env])
        ctr.n_env++;
    yes = rv_nri_adjust(p, &pod, &ctr, &a, &err) == 0 && a.res.lxcfs_on;
    rv_nri_adjustment_free(&a);
    return yes;
}

/* The containers to look at, from all the messages: those served, each id
 * once (an id named twice, with whatever pids, is left alone). They are
 * moved to the front of s->c, s->n of them; the count returned. */
size_t rv_nri_sync_decide(struct rv_nri_plugin *p)
{
    struct rv_nri_sync *s = p->sync;
    size_t total, kept = 0, twice = 0;

    if (!s)
        return 0;
    total = s->n + s->over;
    if (s->n_pods)
        qsort(s->pods, s->n_pods, sizeof(*s->pods), by_pod_id);
    if (s->n)
        qsort(s->c, s->n, sizeof(*s->c), by_id);
    for (size_t i = 0; i + 1 < s->n; i++)
        if (s->c[i].id[0] && strcmp(s->c[i].id, s->c[i + 1].id) == 0) {
            twice += !s->c[i].bad;
            s->c[i].bad = s->c[i + 1].bad = true;
        }
    for (size_t i = 0; i < s->n; i++)
        if (served(p, pod_of(s, s->c[i].pod), &s->c[i]))
            s->c[kept++] = s->c[i];
    rv_log(RV_INFO, "NRI: Synchronize: %zu messages, %zu containers, %zu running that resview serves (those "
           "without a record get their views), %zu others left alone%s", s->msgs, total, kept, total - kept,
           twice ? " (some ids named twice: left alone)" : "");
    if (s->over)
        rv_log(RV_WARN, "NRI: Synchronize named more than %d containers or %d pods: %zu beyond them left alone "
               "(no views for those without a record)", SYNC_MAX, SYNC_PODS_MAX, s->over);
    s->n = kept;
    return kept;
}

/* The views record of a container the hook never saw: its process as it is
 * now (rv_inject_of_pid), rootfs "" (the process's root), every candidate
 * view wanted. 1 written, 0 there is a record already (repair's and
 * watch's), -1 (err). */
static int record_one(const struct rv_config *cfg, const char *id, pid_t pid, const char *why,
                      struct rv_inject *req, struct rv_error *err)
{
    cleanup_json json_t *rec = NULL, *note = NULL;

    if (rv_state_exists(cfg, id))
        return 0;
    memset(req, 0, sizeof(*req));
    if (rv_inject_of_pid(req, pid, err) < 0)
        return -1;
    snprintf(req->lxcfs_root, sizeof(req->lxcfs_root), "%s", cfg->lxcfs_root);
    for (size_t i = 0; i < rv_lxcfs_ncandidates; i++)
        rv_inject_add(req, rv_lxcfs_candidates[i], rv_lxcfs_candidates[i]);
    rec = rv_views_record(req, "pending", "created while resview's NRI plugin was not registered");
    note = json_pack("{s:I, s:i, s:s}", "time", (json_int_t)time(NULL), "pid", (int)pid, "why", why);
    if (!rec || !note)
        return rv_fail(err, ENOMEM, "the record");
    if (rv_state_write(cfg, id, RV_NRI_SYNC_FILE, note, err) < 0 ||
        rv_state_write(cfg, id, RV_VIEWS_FILE, rec, err) < 0)
        return -1;
    return 1;
}

unsigned rv_nri_heal(const struct rv_config *cfg, const char *const *ids, const pid_t *pids, size_t n,
                     bool by_cri)
{
    static struct rv_inject req;   /* large */
    struct rv_repair_opts o = { .wait_ms = 2000 };
    struct rv_repair_stats st;
    struct rv_error err;
    const char *why = by_cri ? "created while resview's NRI plugin could not register: views given by the "
                               "node agent through the CRI; its variables are missing until it is re-created"
                             : "created while resview's NRI plugin was not registered: views given at its "
                               "re-registration; its variables are missing until it is re-created";
    FILE *out;
    char **todo;

    if (n == 0 || !(out = fopen("/dev/null", "we")))
        return 0;
    todo = calloc(n + 1, sizeof(*todo));
    for (size_t i = 0; i < n && todo; i++) {
        int r = record_one(cfg, ids[i], pids[i], why, &req, &err);
        rv_log_set_id(ids[i]);
        if (r != 0)   /* started bare while we were away (repair counts its views given now) */
            rv_metrics_addv(cfg->host_state_dir, (struct rv_metric_inc[]){ { RV_M_NOVIEWS_NRI_AWAY, 1 },
                                                                          { RV_M_NOVARS_NRI_AWAY, 1 } }, 2);
        if (r < 0)
            rv_log(RV_WARN, "NRI: created while the plugin was not registered, and no views given: %s", err.msg);
        if (r == 1 && by_cri)
            rv_log(RV_WARN, "started without resview's variables (created while the NRI plugin could not "
                   "register); re-create it to get them (pid %d: its views are given now, through the CRI)",
                   (int)pids[i]);
        else if (r == 1)
            rv_log(RV_WARN, "NRI: created while the plugin was not registered (pid %d): its views are "
                   "given now, at re-registration; its variables are missing until it is re-created",
                   (int)pids[i]);
        if (r == 1)
            todo[o.n_ids++] = (char *)ids[i];
    }
    rv_log_set_id("-");
    o.ids = todo;
    if (o.n_ids > 0 && rv_repair(cfg, &o, &st, out, &err) < 0)
        rv_log(RV_WARN, "NRI: the views of %d containers created while the plugin was not registered: "
               "%s (repair or watch gives them later)", o.n_ids, err.msg);
    else if (o.n_ids > 0)
        rv_log(RV_INFO, "NRI: views given to %u of %d containers created while the plugin was not "
               "registered (%u failed)", st.repaired, o.n_ids, st.failed);
    free(todo);
    fclose(out);
    return (unsigned)o.n_ids;
}

/* In the child: decide, then record, say and repair each unrecorded one. */
static void sync_child(struct rv_nri_plugin *p, struct rv_nri_sync *s)
{
    const char **ids;
    pid_t *pids;

    rv_nri_sync_decide(p);
    ids = calloc(s->n + 1, sizeof(*ids));
    pids = calloc(s->n + 1, sizeof(*pids));
    for (size_t i = 0; i < s->n && ids && pids; i++) {
        ids[i] = s->c[i].id;
        pids[i] = (pid_t)s->c[i].pid;
    }
    if (ids && pids)
        rv_nri_heal(p->cfg, ids, pids, s->n, false);
    free(ids);
    free(pids);
}

void rv_nri_sync_start(struct rv_nri_plugin *p, const int *close_fds)
{
    pid_t pid;
    int status;

    if (!p->sync || !p->sync->done || p->sync->n == 0)
        return;
    /* a grandchild: nobody waits for it, nothing of the plugin's waits on it */
    if ((pid = fork()) < 0) {
        rv_log(RV_WARN, "NRI: Synchronize: fork: %s (the containers without a record get no views until "
               "the next registration)", strerror(errno));
        return;
    }
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        for (; *close_fds >= 0; close_fds++)
            close(*close_fds);
        if (fork() == 0) {
            sync_child(p, p->sync);
            _exit(0);
        }
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}
