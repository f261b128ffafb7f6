/* codec.c: an instrumented native library (built by crates/cli/tests/native_tracing.rs with
 * gcc -O2 -finstrument-functions -shared -fPIC as libcodec.so) for tests/apps/Mixed.cs:
 * compress_block(n) calls huff_encode 4 times and checksum once. */
__attribute__((noinline)) static long huff_encode(long n, int k) {
    volatile long sum = 0;
    for (long i = 0; i < n; i++) sum += (i ^ k) * i;
    return sum;
}

__attribute__((noinline)) static long checksum(long x) { return x * 31 + 7; }

__attribute__((visibility("default"))) long compress_block(long n) {
    long total = 0;
    for (int k = 0; k < 4; k++) total += huff_encode(n, k);
    return checksum(total);
}
