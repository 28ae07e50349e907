/* Atomic output files and small file helpers. */
#include "amp_base.h"
#include "amp_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

amp_status amp_afile_open(amp_afile *af, const char *path)
{
    memset(af, 0, sizeof *af);
    if (strlen(path) + 32 >= sizeof af->tmp)
        return amp_fail(AMP_EINVAL, "%s: path too long", path);
    snprintf(af->path, sizeof af->path, "%s", path);
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld", path, (long)getpid());
    af->fp = fopen(af->tmp, "wb");
    if (!af->fp)
        return amp_fail(AMP_EIO, "%s: cannot write: %s", path, strerror(errno));
    return AMP_OK;
}

amp_status amp_afile_commit(amp_afile *af)
{
    int err = 0;
    if (!af->fp) return amp_fail(AMP_EIO, "%s: not open", af->path);
    if (ferror(af->fp) || fflush(af->fp) != 0) err = errno ? errno : EIO;
    if (!err && fsync(fileno(af->fp)) != 0 && errno != EINVAL) err = errno;
    if (fclose(af->fp) != 0 && !err) err = errno ? errno : EIO;
    af->fp = NULL;
    if (!err && rename(af->tmp, af->path) != 0) err = errno;
    if (err) {
        unlink(af->tmp);
        return amp_fail(AMP_EIO, "%s: write failed: %s", af->path, strerror(err));
    }
    return AMP_OK;
}

void amp_afile_abort(amp_afile *af)
{
    if (af->fp) {
        fclose(af->fp);
        af->fp = NULL;
        unlink(af->tmp);
    }
}

amp_status amp_write_file_atomic(const char *path, const void *data, size_t len)
{
    amp_afile af;
    amp_status st = amp_afile_open(&af, path);
    if (st) return st;
    if (len && fwrite(data, 1, len, af.fp) != len) {
        int e = errno;
        amp_afile_abort(&af);
        return amp_fail(AMP_EIO, "%s: write failed: %s", path, strerror(e ? e : EIO));
    }
    return amp_afile_commit(&af);
}

amp_status amp_mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return amp_fail(AMP_EINVAL, "bad directory name '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return amp_fail(AMP_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return amp_fail(AMP_EIO, "%s: not a directory", path);
    if (access(path, W_OK) != 0)
        return amp_fail(AMP_EIO, "%s: directory not writable", path);
    return AMP_OK;
}

amp_status amp_read_file(const char *path, size_t max_len, char **data, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return amp_fail(AMP_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) { fclose(fp); return amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
    for (;;) {
        if (n == cap) {
            if (cap >= max_len) {
                free(buf); fclose(fp);
                return amp_fail(AMP_ERANGE, "%s: file larger than %zu bytes", path, max_len);
            }
            cap = cap * 2 > max_len ? max_len : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) { free(buf); fclose(fp); return amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) { free(buf); return amp_fail(AMP_EIO, "%s: read error", path); }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return AMP_OK;
}
