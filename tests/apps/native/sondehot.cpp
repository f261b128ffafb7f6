// A native library for tests/apps/NativeHot.cs (built by crates/cli/tests/native_symbols.rs with
// g++ -O2 -fno-omit-frame-pointer). Its hot functions are not exported: only the library's own
// .symtab (or a debug file) names them. The sort spends its time inside glibc's qsort, whose
// internals only Debian's libc6-dbg debug file names.
#include <cstdlib>

namespace Acme {
namespace Codec {
__attribute__((noinline)) long huff_encode(long n) {
    volatile long sum = 0;
    for (long i = 0; i < n; i++) sum += i * i;
    return sum;
}
}  // namespace Codec
}  // namespace Acme

static int compare(const void* a, const void* b) {
    int x = *static_cast<const int*>(a), y = *static_cast<const int*>(b);
    return (x > y) - (x < y);
}

extern "C" __attribute__((visibility("default"))) long sonde_hot_encode(long n) {
    return Acme::Codec::huff_encode(n) + 1;
}

extern "C" __attribute__((visibility("default"))) long sonde_hot_sort(int n) {
    int* values = static_cast<int*>(std::malloc(sizeof(int) * n));
    if (!values) return 0;
    unsigned seed = 12345;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        values[i] = static_cast<int>(seed >> 8);
    }
    std::qsort(values, n, sizeof(int), compare);
    long middle = values[n / 2];
    std::free(values);
    return middle;
}
