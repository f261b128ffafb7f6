// Calls a native library (tests/apps/native/sondehot.cpp, built by the test into this program's
// directory as libsondehot.so) for about ARG milliseconds (default 1000): half the time in a
// C++ function the library does not export, half sorting with glibc's qsort.
using System;
using System.Diagnostics;
using System.Runtime.InteropServices;

static class NativeHot
{
    [DllImport("sondehot")] static extern long sonde_hot_encode(long n);
    [DllImport("sondehot")] static extern long sonde_hot_sort(int n);

    static int Main(string[] args)
    {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 1000;
        var clock = Stopwatch.StartNew();
        long sum = 0;
        while (clock.ElapsedMilliseconds < ms)
        {
            sum += sonde_hot_encode(3000000);
            sum += sonde_hot_sort(50000);
        }
        Console.WriteLine("done " + (sum & 1));
        return 0;
    }
}
