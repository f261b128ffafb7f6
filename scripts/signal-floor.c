// The floor under any signal-based CPU-time sampler on this machine: a per-thread task-clock
// perf event (user mode only) whose overflow raises a signal on the thread, a handler that only
// re-arms it (and, with "clock", also reads the thread's CPU clock). Same on/off slice method as
// crates/agent/examples/sample_cost.rs (BENCHMARKS.md, "What is left at 1 kHz").
// cc -O2 -o /tmp/signal-floor scripts/signal-floor.c && /tmp/signal-floor 1000 [clock]
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static int fd, with_clock;
static volatile unsigned long samples;
static void handler(int sig, siginfo_t *info, void *ctx) {
    (void)sig; (void)info; (void)ctx;
    if (with_clock) { struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); }
    samples++;
    ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
}
static unsigned long work(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++) { x = x * 6364136223846793005ul + i; __asm__ volatile("" : "+r"(x)); }
    return x;
}
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int rate = argc > 1 ? atoi(argv[1]) : 1000;
    with_clock = argc > 2 && !strcmp(argv[2], "clock");
    struct sigaction sa = {0};
    sa.sa_sigaction = handler; sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN + 3, &sa, 0);
    struct perf_event_attr attr = {0};
    attr.type = PERF_TYPE_SOFTWARE; attr.size = sizeof attr; attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = 1000000000ul / rate; attr.disabled = 1; attr.exclude_kernel = 1; attr.exclude_hv = 1;
    fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) { perror("perf_event_open"); return 1; }
    struct f_owner_ex owner = { F_OWNER_TID, gettid() };
    fcntl(fd, F_SETSIG, SIGRTMIN + 3); fcntl(fd, F_SETOWN_EX, &owner); fcntl(fd, F_SETFL, O_ASYNC);
    unsigned long n = 20000000; work(n);
    double on[20], off[20]; int non = 0, noff = 0;
    for (int round = 0; round < 40; round++) {
        int sampled = round % 2 == 0;
        if (sampled) ioctl(fd, PERF_EVENT_IOC_REFRESH, 1); else ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        double t = now(); work(n); t = now() - t;
        if (sampled) on[non++] = t; else off[noff++] = t;
    }
    qsort(on, non, sizeof *on, cmp); qsort(off, noff, sizeof *off, cmp);
    double a = off[noff / 2], b = on[non / 2], over = b / a - 1;
    printf("rate %d Hz%s: slice %.1f ms unsampled, %.1f ms sampled: overhead %+.2f%% = %.1f us per sample (%lu samples)\n",
           rate, with_clock ? " (+clock read)" : "", a * 1e3, b * 1e3, over * 100, over * 1e6 / rate, samples);
    return 0;
}
