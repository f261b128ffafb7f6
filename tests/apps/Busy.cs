// Busy.cs: CPU-bound work split over THREADS threads, for sampling-overhead benchmarks.
// Usage: Busy.exe [THREADS=1] [MILLIONS=400]  — MILLIONS million iterations in all, shared
// evenly, after a 600 ms warm-up; prints `threads=N elapsed_ms=T` for the timed part (thread
// start to last join).

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
            // Warm up until the code is final before the timed part: with tiered compilation, Work
            // and Mix move from tier 0 (and an OSR version of Work) to tier 1 in the background,
            // at a moment that shifts with anything else the process does — a profiler included,
            // which made a profiled run's timed part up to 11% *faster* than the baseline's when
            // the timed part still included the tier-0 phase. 600 ms of calls is well past the
            // 30 calls and 100 ms delay the runtime waits before it tiers up.
            Stopwatch warm = Stopwatch.StartNew();
            while (warm.ElapsedMilliseconds < 600) Work(0, 1000000);
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
