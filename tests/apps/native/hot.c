/* hot.c: the native tracing benchmark's program (scripts/bench-native.py): N calls of mid, each
 * calling leaf twice — 3N calls of tiny functions, built with -finstrument-functions.
 *   hot N   (default 1000000); prints "calls 3N sum S". */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) long mid(long x) { return leaf(x) ^ leaf(x + 1); }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long s = 0;
    for (long i = 0; i < n; i++) s += mid(i);
    printf("calls %ld sum %ld\n", 3 * n, s);
    return 0;
}
