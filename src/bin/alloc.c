/* alloc.c - malloc for the static (musl) resview-runtime and resview-hook,
 * linked in front of musl's; the glibc builds keep glibc's.
 *
 * Why: musl's mallocng hands a group of blocks back to the kernel as soon as
 * it empties, so one create (parse, edit, render a spec) mapped and unmapped
 * memory 48 times and faulted the same pages in again, and on a VM a page
 * fault or a syscall is expensive (~10 us per fault here). With this
 * allocator a create on tests/samples/k8s-spec.json makes 88 syscalls instead
 * of 136 (tests/README.md "Performance").
 *
 * How: power-of-two size classes from 16 B to 64 KiB, carved from 256 KiB
 * chunks that are never returned; a freed block goes on its class's list and
 * is reused as it is. Larger blocks are mapped and unmapped on their own.
 * Memory is bounded by each class's peak, which suits a process that lives a
 * few milliseconds as well as the FUSE broker's loop of like requests. Every
 * block is 16-byte aligned. Single-threaded, as every process of these
 * binaries is (a bounded child shares the heap but runs while its parent
 * waits: bounded.c).
 *
 * RV_ALLOC_PREFIX renames the entry points (the unit test calls them beside
 * the C library's own). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef RV_ALLOC_PREFIX
#define RV_ALLOC_PREFIX
#endif
#define RV_CAT2(a, b) a##b
#define RV_CAT(a, b) RV_CAT2(a, b)
#define ENTRY(name) RV_CAT(RV_ALLOC_PREFIX, name)

void *ENTRY(malloc)(size_t n);
void ENTRY(free)(void *p);
void *ENTRY(calloc)(size_t a, size_t b);
void *ENTRY(realloc)(void *p, size_t n);
int ENTRY(posix_memalign)(void **out, size_t align, size_t n);
void *ENTRY(aligned_alloc)(size_t align, size_t n);
size_t ENTRY(malloc_usable_size)(void *p);

#define MIN_SHIFT 4                      /* 16 B */
#define MAX_SHIFT 16                     /* 64 KiB: larger blocks are mapped */
#define N_CLASSES (MAX_SHIFT - MIN_SHIFT + 1)
#define CHUNK ((size_t)256 << 10)
#define LARGE ((size_t)-1)

/* Before every block: its class, or LARGE with the mapping it lives in. */
struct hdr {
    size_t cls;
    union {
        struct hdr *next;                /* free: the next block of its class */
        size_t map_len;                  /* LARGE: the mapping's length */
    };
};
_Static_assert(sizeof(struct hdr) == 16, "blocks stay 16-byte aligned");

static struct hdr *free_list[N_CLASSES];
static char *bump, *bump_end;

static size_t class_of(size_t n)
{
    size_t c = 0;

    while (((size_t)1 << (c + MIN_SHIFT)) < n)
        c++;
    return c;
}

static size_t capacity(const struct hdr *h)
{
    return h->cls == LARGE ? h->map_len - sizeof(*h) : (size_t)1 << (h->cls + MIN_SHIFT);
}

static void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* fresh: the block has never been handed out (zero, as mapped) */
static void *alloc(size_t n, int *fresh)
{
    struct hdr *h;
    size_t c, need;

    *fresh = 1;
    if (n > ((size_t)1 << MAX_SHIFT)) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (n > SIZE_MAX - sizeof(*h) - page) {
            errno = ENOMEM;
            return NULL;
        }
        need = (n + sizeof(*h) + page - 1) & ~(page - 1);
        if (!(h = map(need)))
            return NULL;
        h->cls = LARGE;
        h->map_len = need;
        return h + 1;
    }
    c = class_of(n ? n : 1);
    if ((h = free_list[c])) {
        free_list[c] = h->next;
        *fresh = 0;
        return h + 1;
    }
    need = sizeof(*h) + ((size_t)1 << (c + MIN_SHIFT));
    if (!bump || (size_t)(bump_end - bump) < need) {
        /* the rest of the old chunk is left unused (at most one block) */
        if (!(bump = map(CHUNK)))
            return NULL;
        bump_end = bump + CHUNK;
    }
    h = (struct hdr *)bump;
    bump += need;
    h->cls = c;
    return h + 1;
}

void *ENTRY(malloc)(size_t n)
{
    int fresh;
    return alloc(n, &fresh);
}

void ENTRY(free)(void *p)
{
    struct hdr *h = (struct hdr *)p - 1;

    if (!p)
        return;
    if (h->cls == LARGE) {
        munmap(h, h->map_len);
        return;
    }
    h->next = free_list[h->cls];
    free_list[h->cls] = h;
}

void *ENTRY(calloc)(size_t a, size_t b)
{
    int fresh;
    void *p;

    if (b && a > SIZE_MAX / b) {
        errno = ENOMEM;
        return NULL;
    }
    p = alloc(a * b, &fresh);
    if (p && !fresh)
        memset(p, 0, a * b);
    return p;
}

void *ENTRY(realloc)(void *p, size_t n)
{
    size_t have;
    void *q;

    if (!p)
        return ENTRY(malloc)(n);
    have = capacity((struct hdr *)p - 1);
    if (n <= have && (n > have / 2 || have <= 16))
        return p;                        /* fits, and not worth a smaller block */
    if (!(q = ENTRY(malloc)(n)))
        return NULL;
    memcpy(q, p, n < have ? n : have);
    ENTRY(free)(p);
    return q;
}

/* Alignments beyond 16 are not asked for by anything linked here; refused
 * rather than half done. */
int ENTRY(posix_memalign)(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    if (align > 16)
        return ENOMEM;
    *out = ENTRY(malloc)(n);
    return *out ? 0 : ENOMEM;
}

void *ENTRY(aligned_alloc)(size_t align, size_t n)
{
    void *p = NULL;
    int e = ENTRY(posix_memalign)(&p, align < sizeof(void *) ? sizeof(void *) : align, n);

    if (e)
        errno = e;
    return p;
}

size_t ENTRY(malloc_usable_size)(void *p)
{
    return p ? capacity((struct hdr *)p - 1) : 0;
}
