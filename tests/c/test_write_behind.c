/* Write-behind (core/src/write_behind.c): its ranges, worked out by hand from START 64 MiB,
 * CHUNK 8 MiB, KEEP 32 MiB; the file's bytes unchanged; and, on a disk file system, the
 * dropped range really out of the page cache while the last KEEP bytes stay in it. */
#define _DEFAULT_SOURCE /* mincore */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "check.h"
#include "hbdlab/io.h"

#define MIB ((int64_t)1 << 20)

/* Writes pieces [from, to) of 1 MiB (piece i filled with byte i) to fd through the write-behind. */
static void write_pieces(int fd, hl_write_behind *w, int from, int to, char *piece)
{
    for (int i = from; i < to; i++) {
        memset(piece, (char)i, (size_t)MIB);
        assert_int_equal(write(fd, piece, (size_t)MIB), MIB);
        hl_write_behind_wrote(w, MIB);
    }
}

static void test_ranges_bytes_and_pages(void **state)
{
    (void)state;
    char path[] = "write_behind_test.XXXXXX"; /* in the build folder: a disk, not /tmp's tmpfs */
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char *piece = malloc((size_t)MIB);
    assert_non_null(piece);
    hl_write_behind w;
    hl_write_behind_init(&w, fd);
    /* under START (64 MiB): nothing handed over */
    write_pieces(fd, &w, 0, 63, piece);
    assert_int_equal(w.written, 63 * MIB);
    assert_int_equal(w.submitted, 0);
    assert_int_equal(w.dropped, 0);
    /* at 64 MiB: [0, 64) submitted; end = 64 - 32 = 32 >= CHUNK past 0: [0, 32) dropped.
     * 65..71: under a CHUNK since 64, nothing. 72: submitted 72, end 40 (8 past 32): dropped 40.
     * 80: submitted 80, end 48: dropped 48. 81..83: nothing. */
    write_pieces(fd, &w, 63, 83, piece);
    assert_int_equal(w.written, 83 * MIB);
    assert_int_equal(w.submitted, 80 * MIB);
    assert_int_equal(w.dropped, 48 * MIB);
#ifdef __linux__
    struct statfs fs;
    long page = sysconf(_SC_PAGESIZE);
    if (fstatfs(fd, &fs) == 0 && fs.f_type == 0xEF53 && page > 0) { /* ext2/3/4 (EXT4_SUPER_MAGIC) */
        size_t bytes = (size_t)(83 * MIB), pages = bytes / (size_t)page;
        void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
        assert_true(map != MAP_FAILED);
        unsigned char *in = malloc(pages);
        assert_non_null(in);
        assert_int_equal(mincore(map, bytes, in), 0);
        size_t resident_dropped = 0, resident_kept = 0;
        for (size_t i = 0; i < pages; i++) {
            /* from 1 MiB: valgrind reads the head of a file it sees mapped (to look for an ELF
             * header), which brings its first pages back into the cache */
            if ((int64_t)i * page >= MIB && (int64_t)i * page < 48 * MIB)
                resident_dropped += in[i] & 1;
            else if ((int64_t)i * page >= 51 * MIB) /* the last 32 MiB: all kept */
                resident_kept += in[i] & 1;
        }
        assert_int_equal(resident_dropped, 0);
        /* kept: never dropped by the write-behind; memory pressure could still evict a few */
        size_t kept_pages = (size_t)(32 * MIB) / (size_t)page;
        if (resident_kept < kept_pages * 3 / 4)
            fail_msg("%zu of the last %zu pages resident: the drop reached past its range", resident_kept, kept_pages);
        free(in);
        munmap(map, bytes);
    } else {
        print_message("write_behind: not ext4, page-cache residency not checked\n");
    }
#endif
    /* the bytes: piece i is byte i all through (read back, dropped pages from the disk) */
    char *back = malloc((size_t)MIB);
    assert_non_null(back);
    for (int i = 0; i < 83; i++) {
        assert_int_equal(pread(fd, back, (size_t)MIB, (off_t)(i * MIB)), MIB);
        memset(piece, (char)i, (size_t)MIB);
        if (memcmp(back, piece, (size_t)MIB) != 0)
            fail_msg("piece %d differs", i);
    }
    free(back);
    free(piece);
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ranges_bytes_and_pages)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
