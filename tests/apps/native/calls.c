/* calls.c: a native program built with -finstrument-functions (crates/cli/tests/native_tracing.rs):
 * recursion (fib(15): 1,973 calls), calls through function pointers (twice/thrice, 5 each from
 * main), longjmp out of three instrumented frames (jumper → deep × 4, five times: no exit hooks
 * for the frames it leaves), and 4 threads calling twice 1,000 times each; `unused` never runs
 * (function coverage). Prints "sum 725". */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf env;
__attribute__((noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) int twice(int x) { return 2 * x; }
__attribute__((noinline)) int thrice(int x) { return 3 * x; }
__attribute__((noinline)) void deep(int n) { if (n == 0) longjmp(env, 1); deep(n - 1); }
__attribute__((noinline)) void jumper(void) { if (setjmp(env) == 0) deep(3); }
__attribute__((noinline)) int unused(int x) { return x + 1; }
__attribute__((noinline)) void *worker(void *arg) { long s = 0; for (int i = 0; i < 1000; i++) s += twice(i); return (void *)s; }

int main(int argc, char **argv) {
    int (*ops[2])(int) = { twice, thrice };
    long s = 0;
    for (int i = 0; i < 10; i++) s += ops[i % 2](i);
    s += fib(15);
    for (int i = 0; i < 5; i++) jumper();
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, worker, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("sum %ld\n", s);
    return 0;
}
