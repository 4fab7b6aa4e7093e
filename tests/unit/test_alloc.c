/* The static binaries' allocator (src/bin/alloc.c), under its own names
 * beside the C library's: contents kept across realloc, calloc zeroes
 * reused blocks, alignment, large blocks, and a long loop of like requests
 * (the FUSE broker's life) that does not grow the heap. */
#define _GNU_SOURCE
#define RV_ALLOC_PREFIX rv_
#include "../../src/bin/alloc.c"
#include "unit.h"

#include <stdbool.h>
#include <stdlib.h>

/* chunks mapped so far: the bump pointer's moves to a new chunk */
static int chunks_seen(void)
{
    static char *last;
    static int n;

    if (bump_end != last) {
        last = bump_end;
        n++;
    }
    return n;
}

int main(void)
{
    unsigned char *p, *q;
    bool zero = true, kept = true, aligned = true;
    size_t sizes[] = { 0, 1, 15, 16, 17, 100, 4096, 65536, 65537, 1 << 20 };
    int before;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        p = rv_malloc(sizes[i]);
        aligned = aligned && p && ((uintptr_t)p & 15) == 0 && rv_malloc_usable_size(p) >= sizes[i];
        if (p)
            memset(p, 0xa5, sizes[i]);
        rv_free(p);
    }
    ok(aligned, "every size from 0 B to 1 MiB: 16-byte aligned, at least as large as asked");

    /* a reused block is dirty: calloc must clear it */
    p = rv_malloc(200);
    memset(p, 0xff, 200);
    rv_free(p);
    q = rv_calloc(50, 4);
    for (int i = 0; i < 200; i++)
        zero = zero && q[i] == 0;
    ok(q == p && zero, "calloc clears a block reused from the free list");
    rv_free(q);
    ok(rv_calloc(SIZE_MAX / 2, 4) == NULL && errno == ENOMEM, "calloc refuses a size that overflows");

    /* growth by doubling, as jansson's string buffer does, keeps the bytes */
    p = rv_malloc(8);
    for (size_t n = 8; n <= (size_t)1 << 18; n *= 2) {
        p = rv_realloc(p, n);
        if (!p)
            break;
        for (size_t i = n / 2; i < n; i++)
            p[i] = (unsigned char)i;
    }
    for (size_t i = 4; p && i < (size_t)1 << 18; i++)
        kept = kept && p[i] == (unsigned char)i;
    ok(p && kept, "realloc from 8 B to 256 KiB keeps the contents");
    p = rv_realloc(p, 10);
    ok(p && p[9] == 9, "realloc to a smaller class keeps the head");
    rv_free(p);

    void *a = NULL;
    ok(rv_posix_memalign(&a, 16, 40) == 0 && a && ((uintptr_t)a & 15) == 0,
       "posix_memalign to 16");
    rv_free(a);
    ok(rv_posix_memalign(&a, 64, 40) == ENOMEM && rv_posix_memalign(&a, 3, 40) == EINVAL,
       "larger alignments are refused, not half done");

    /* the broker's life: many requests of like sizes, each freed */
    before = chunks_seen();
    for (int i = 0; i < 100000; i++) {
        void *r[6];
        for (int k = 0; k < 6; k++)
            r[k] = rv_malloc((size_t)(16 << k) + (size_t)(i % 7));
        for (int k = 0; k < 6; k++)
            rv_free(r[k]);
        chunks_seen();
    }
    ok(chunks_seen() - before <= 1, "100,000 rounds of six allocations map at most one more chunk (%d)",
       chunks_seen() - before);
    return unit_done();
}
