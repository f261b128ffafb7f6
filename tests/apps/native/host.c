/* host.c: an instrumented program that loads an instrumented plugin with dlopen and calls it 5
 * times through dlsym (crates/cli/tests/native_tracing.rs): the plugin's functions are named and
 * counted like the program's. Prints "plugin 330". */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((noinline)) int call_plugin(int (*run)(int), int n) { return run(n); }

int main(int argc, char **argv) {
    void *plugin = dlopen(argc > 1 ? argv[1] : "./libplugin.so", RTLD_NOW);
    if (!plugin) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*run)(int) = (int (*)(int))dlsym(plugin, "plugin_run");
    int total = 0;
    for (int i = 0; i < 5; i++) total += call_plugin(run, i);
    printf("plugin %d\n", total);
    return 0;
}
