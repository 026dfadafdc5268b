/* Reading input files (regular files only, within the input limit, no NUL byte), the UTF-8
 * check and the environment's byte limits: every file and JSON text hbdlab reads passes here. */
#include "hbdlab/io.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err_int.h"

void hl_free(void *p) { free(p); }

hl_status hl_env_bytes(const char *name, double def, double max, double *bytes, hl_err *err)
{
    if (!name || !bytes)
        return hl_fail(err, HL_EINVAL, "hl_env_bytes: the %s is NULL", !name ? "variable name" : "result");
    const char *v = getenv(name);
    *bytes = def;
    if (!v || !*v)
        return HL_OK;
    /* the text must be plain decimal digits, with an optional fraction and exponent ("65536",
     * "8e9", "1.5e9"): strtod alone also took " 10", "+10", "0x10" and "inf" */
    const char *q = v;
    int digits = 0;
    for (; *q >= '0' && *q <= '9'; q++)
        digits++;
    if (digits && *q == '.')
        for (q++; *q >= '0' && *q <= '9'; q++)
            ;
    if (digits && (*q == 'e' || *q == 'E')) {
        const char *x = q + 1 + (q[1] == '+' || q[1] == '-');
        if (*x >= '0' && *x <= '9')
            for (q = x; *q >= '0' && *q <= '9'; q++)
                ;
    }
    char *end;
    errno = 0;
    double b = digits && !*q ? strtod(v, &end) : 0;
    if (!digits || *q)
        end = (char *)v;
    /* the text shown is cut at 40 bytes and its control bytes become '?': it reaches a terminal */
    char shown[48];
    size_t n = 0;
    for (; v[n] && n < 40; n++)
        shown[n] = (unsigned char)v[n] < 32 || v[n] == 127 ? '?' : v[n];
    shown[n] = 0;
    if (end == v || *end || errno == ERANGE || !(b >= 1 && b <= max) || b != floor(b))
        return hl_fail(err, HL_EINVAL,
                       "environment variable %s: '%s%s' is not allowed (a whole number of bytes in 1..%g, written in "
                       "decimal digits: 8000000000 or 8e9)",
                       name, shown, v[n] ? "..." : "", max);
    *bytes = b;
    return HL_OK;
}

hl_status hl_max_input_bytes(int64_t *bytes, hl_err *err)
{
    if (!bytes)
        return hl_fail(err, HL_EINVAL, "hl_max_input_bytes: the output is NULL");
    double b;
    hl_status st = hl_env_bytes("HBDLAB_MAX_INPUT_BYTES", (double)((int64_t)64 << 20), 9e15, &b, err);
    *bytes = st == HL_OK ? (int64_t)b : 0;
    return st;
}

int hl_open_input(const char *path, int64_t *size, hl_err *err)
{
    if (!path) {
        hl_fail(err, HL_EINVAL, "hl_open_input: the path is NULL");
        return -1;
    }
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        hl_fail(err, HL_EIO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        hl_fail(err, HL_EIO, "%s: cannot stat: %s", path, strerror(e));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        hl_fail(err, HL_EIO, "%s: not a regular file (%s)", path,
                S_ISDIR(st.st_mode)    ? "a directory"
                : S_ISFIFO(st.st_mode) ? "a FIFO"
                : S_ISCHR(st.st_mode)  ? "a character device"
                : S_ISSOCK(st.st_mode) ? "a socket"
                                       : "a device");
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *size = (int64_t)st.st_size;
    return fd;
}

hl_status hl_read_file(const char *path, char **text, hl_err *err)
{
    if (!path || !text)
        return hl_fail(err, HL_EINVAL, "hl_read_file: the %s is NULL", !path ? "path" : "text output");
    int64_t size, cap;
    int fd = hl_open_input(path, &size, err);
    if (fd < 0)
        return HL_EIO;
    if (hl_max_input_bytes(&cap, err)) {
        close(fd);
        return HL_EINVAL;
    }
    if (size > cap) {
        close(fd);
        return hl_fail(err, HL_EIO,
                       "%s: %lld bytes is more than the input limit of %lld bytes (HBDLAB_MAX_INPUT_BYTES)", path,
                       (long long)size, (long long)cap);
    }
    /* the file may grow while it is read: read at most cap + 1 bytes */
    size_t want = (size_t)size + 1, len = 0;
    char *buf = malloc(want + 1);
    if (!buf) {
        close(fd);
        return hl_fail(err, HL_ENOMEM, "%s: out of memory reading %lld bytes", path, (long long)size);
    }
    for (;;) {
        if (len == want) {
            if ((int64_t)len > cap) {
                free(buf);
                close(fd);
                return hl_fail(err, HL_EIO, "%s: more than the input limit of %lld bytes (HBDLAB_MAX_INPUT_BYTES)",
                               path, (long long)cap);
            }
            size_t bigger_n = want * 2 > (size_t)cap + 1 ? (size_t)cap + 1 : want * 2;
            char *bigger = realloc(buf, bigger_n + 1);
            if (!bigger) {
                free(buf);
                close(fd);
                return hl_fail(err, HL_ENOMEM, "%s: out of memory reading the file", path);
            }
            buf = bigger;
            want = bigger_n;
        }
        ssize_t n = read(fd, buf + len, want - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return hl_fail(err, HL_EIO, "%s: read error: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        long long at = (long long)(nul - buf);
        free(buf);
        return hl_fail(err, HL_EPARSE, "%s: byte %lld: a NUL byte (not a text file)", path, at);
    }
    buf[len] = '\0';
    *text = buf;
    return HL_OK;
}

int64_t hl_utf8_invalid_offset(const char *text, int64_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (int64_t i = 0; i < len;) {
        unsigned c = s[i];
        int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4) || i + n >= len + (n == 0))
            return i;
        for (int k = 1; k <= n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        if ((n == 2 && c == 0xE0 && s[i + 1] < 0xA0) || (n == 3 && c == 0xF0 && s[i + 1] < 0x90) ||
            (n == 2 && c == 0xED && s[i + 1] >= 0xA0) || (n == 3 && c == 0xF4 && s[i + 1] >= 0x90))
            return i; /* overlong forms, UTF-16 surrogates, code points above U+10FFFF */
        i += n + 1;
    }
    return -1;
}
