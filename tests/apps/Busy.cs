// Busy.cs: CPU-bound work split over THREADS threads, for sampling-overhead benchmarks.
// Usage: Busy.exe [THREADS=1] [MILLIONS=400]  — MILLIONS million iterations in all, shared
// evenly; prints `threads=N elapsed_ms=T` for the timed part (thread start to last join).

using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Acme
{
    static class Busy
    {
        static double[] sinks;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static double Mix(double x, long i) { return x * 1.0000001 + (i & 7); }

        static void Work(int id, long iterations)
        {
            double x = id;
            for (long i = 0; i < iterations; i++) x = Mix(x, i);
            sinks[id] = x;
        }

        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 1;
            long total = (args.Length > 1 ? long.Parse(args[1], CultureInfo.InvariantCulture) : 400) * 1000000;
            sinks = new double[n];
            Work(0, 1000000); // warm up (JIT, tiering) before the timed part
            var threads = new Thread[n];
            Stopwatch sw = Stopwatch.StartNew();
            for (int t = 0; t < n; t++)
            {
                int id = t;
                threads[t] = new Thread(() => Work(id, total / n));
                threads[t].Start();
            }
            foreach (var th in threads) th.Join();
            sw.Stop();
            Console.WriteLine("threads={0} elapsed_ms={1}", n, sw.Elapsed.TotalMilliseconds.ToString("F1", CultureInfo.InvariantCulture));
            return 0;
        }
    }
}
