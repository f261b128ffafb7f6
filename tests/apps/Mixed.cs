// Mixed: a managed method calling an instrumented native library (tests/apps/native/codec.c,
// built by the test as libcodec.so beside this program) through P/Invoke:
// Acme.Codec.Compress (10 calls) → compress_block (10) → huff_encode (40) and checksum (10).
// Prints "done N"; exits 0.
using System;
using System.Runtime.InteropServices;

namespace Acme
{
    public static class Codec
    {
        [DllImport("codec")] static extern long compress_block(long n);

        static long Compress(long n)
        {
            return compress_block(n);
        }

        static int Main(string[] args)
        {
            long sum = 0;
            for (int i = 0; i < 10; i++) sum += Compress(1000 + i);
            Console.WriteLine("done " + (sum & 1));
            return 0;
        }
    }
}
