/* longjmp.c: functions called after a longjmp, from the frame the jump returned to
 * (crates/cli/tests/native_tracing.rs). lj_outer calls lj_mid three times from one call
 * instruction, each time after setjmp; lj_mid calls lj_deep, which longjmps back: neither runs
 * its exit hook. lj_outer then calls after_longjmp, which calls bump, small enough to be inlined
 * at -O1 and above (its hooks are then called from after_longjmp's frame). The right tree:
 * main → lj_outer → {lj_mid ×3 → lj_deep ×3, after_longjmp → bump}. Prints "sink 8". */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) void lj_deep(void) { sink++; longjmp(env, 1); }
__attribute__((noinline)) void lj_mid(void) { lj_deep(); sink += 100; }
static inline void bump(void) { sink += 3; }
__attribute__((noinline)) void after_longjmp(void) { sink++; bump(); }

__attribute__((noinline)) void lj_outer(void) {
    for (volatile int i = 0; i < 3; i++) {
        if (setjmp(env) == 0) lj_mid();
    }
    after_longjmp();
    sink += 1;
}

int main(void) {
    lj_outer();
    printf("sink %d\n", sink);
    return 0;
}
