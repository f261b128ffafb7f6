/* plugin.c: an instrumented library that tests/apps/native/host.c loads with dlopen (built by
 * crates/cli/tests/native_tracing.rs as libplugin.so): plugin_run calls plugin_step 3 times. */
__attribute__((noinline)) static int plugin_step(int x) { return x * 7 + 1; }

__attribute__((visibility("default"))) int plugin_run(int n) {
    int s = 0;
    for (int i = 0; i < 3; i++) s += plugin_step(n + i);
    return s;
}
