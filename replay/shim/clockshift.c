/*
 * libclockshift: shifts one process's wall clock by an offset in
 * milliseconds read from a file, so `locklab replay` can make a single
 * redis-server's clock jump (Redis judges key expiry by its wall clock).
 *
 * Loaded with LD_PRELOAD; the offset file is named by CLOCKSHIFT_FILE and
 * read again on every call, so rewriting it (write a temporary file, then
 * rename it over the old one: a reader never sees an empty file) moves the
 * clock at once. The offset is absolute (relative to the real clock), not
 * cumulative. No file, or no variable: no shift.
 *
 * Why not libfaketime: with Debian's redis-server (jemalloc) it deadlocks at
 * start-up, because jemalloc reads the clock during its own initialisation
 * and libfaketime's initialisation allocates. This shim therefore never
 * allocates and never calls dlsym: the real clock comes from the raw
 * clock_gettime system call and the file is read with raw system calls.
 *
 * Only CLOCK_REALTIME and CLOCK_REALTIME_COARSE (and gettimeofday/time,
 * which read them) move; monotonic clocks, which drive Redis's timers and
 * event loop but not key expiry, are left alone.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_ms(void)
{
    /* getenv neither allocates nor reads the clock. */
    const char *path = getenv("CLOCKSHIFT_FILE");
    if (!path)
        return 0;
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[32];
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0)
        return 0;
    long long v = 0;
    int neg = 0, i = 0;
    if (buf[0] == '-') {
        neg = 1;
        i = 1;
    }
    for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        v = v * 10 + (buf[i] - '0');
    return neg ? -v : v;
}

static int real_clock_gettime(clockid_t clk, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void shift(struct timespec *ts)
{
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ms() * 1000000LL;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000L;
        ts->tv_sec -= 1;
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int r = real_clock_gettime(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
        shift(ts);
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    int r = real_clock_gettime(CLOCK_REALTIME, &ts);
    if (r != 0)
        return r;
    shift(&ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    shift(&ts);
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
