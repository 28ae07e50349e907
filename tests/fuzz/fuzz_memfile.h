/* Fuzz helpers: readers that take a path read the input through a memfd
 * (/proc/self/fd/N), so no disk file is written per execution; parsers that
 * take a string get the input as a NUL-terminated copy. */
#ifndef FUZZ_MEMFILE_H
#define FUZZ_MEMFILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Replaces the memfd's contents with data and returns its path. */
static inline const char *fuzz_memfile(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ampsim-fuzz", 0);
        if (fd < 0) { perror("memfd_create"); abort(); }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror("memfd write");
        abort();
    }
    return path;
}

/* The input as a NUL-terminated string (free it); NULL when out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return NULL;
    memcpy(text, data, size);
    text[size] = 0;
    return text;
}

#endif
