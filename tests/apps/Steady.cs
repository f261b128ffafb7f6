// Steady.cs: a service-like load for the daemon's benchmark (scripts/bench-daemon.py): for
// SECONDS, every PERIOD_MS it computes for WORK_MS (checksums over an array, many small calls),
// then sleeps the rest of the period. Prints `rounds=<rounds done>`.
// Usage: Steady.exe [SECONDS=30] [WORK_MS=5] [PERIOD_MS=100]
using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Acme
{
    static class Steady
    {
        static int[] data = new int[4096];

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Mix(int seed)
        {
            int h = seed;
            for (int i = 0; i < data.Length; i++)
            {
                h = unchecked(h * 31 + data[i] + i);
            }
            return h;
        }

        static int Main(string[] args)
        {
            double seconds = args.Length > 0 ? double.Parse(args[0], CultureInfo.InvariantCulture) : 30;
            int work = args.Length > 1 ? int.Parse(args[1], CultureInfo.InvariantCulture) : 5;
            int period = args.Length > 2 ? int.Parse(args[2], CultureInfo.InvariantCulture) : 100;
            for (int i = 0; i < data.Length; i++)
            {
                data[i] = i * 7;
            }
            var run = Stopwatch.StartNew();
            long rounds = 0;
            int h = 0;
            while (run.Elapsed.TotalSeconds < seconds)
            {
                var start = run.ElapsedMilliseconds;
                while (run.ElapsedMilliseconds - start < work)
                {
                    h ^= Mix(h);
                    rounds++;
                }
                int left = period - (int)(run.ElapsedMilliseconds - start);
                if (left > 0)
                {
                    Thread.Sleep(left);
                }
            }
            Console.WriteLine("rounds=" + rounds + " h=" + (h & 1));
            return 0;
        }
    }
}
