/* ampsim — atomic output files: written under a temporary name in the same
 * folder, flushed, fsync'ed and renamed on commit, so a killed process never
 * leaves a half-written file that looks complete. */
#ifndef AMP_IO_H
#define AMP_IO_H

#include <stdio.h>
#include "amp_base.h"

typedef struct amp_afile {
    FILE *fp;            /* write through this */
    char path[4096];     /* final name */
    char tmp[4096];      /* temporary name */
} amp_afile;

/* Opens PATH.tmp.<pid> for writing ("wb"). AMP_EIO naming the file on failure. */
AMP_API amp_status amp_afile_open(amp_afile *af, const char *path);
/* Flushes, fsyncs, closes and renames to the final name; on any failure
 * (disk full, ...) removes the temporary and returns AMP_EIO naming the file. */
AMP_API amp_status amp_afile_commit(amp_afile *af);
/* Closes and removes the temporary (error paths). Safe on a closed amp_afile. */
AMP_API void amp_afile_abort(amp_afile *af);
/* Writes a whole buffer atomically to path. */
AMP_API amp_status amp_write_file_atomic(const char *path, const void *data, size_t len);
/* Creates a directory (and parents) if missing; AMP_EIO naming it on failure. */
AMP_API amp_status amp_mkdir_p(const char *path);
/* Reads a whole file into a malloc'ed buffer (NUL-terminated; *len excludes it).
 * Refuses files larger than max_len with AMP_ERANGE. */
AMP_API amp_status amp_read_file(const char *path, size_t max_len, char **data, size_t *len);
/* SHA-256 of a file as 64 hex digits and a NUL (sim/sha256.c). */
AMP_API amp_status amp_sha256_file(const char *path, char hex[65]);

#endif
