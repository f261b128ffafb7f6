// Split.cs: known work split for sampling-accuracy tests. Three methods burn CPU in fixed
// proportions, interleaved in small slices; the program measures each method's own time with
// Stopwatch and prints it, so a test can compare the profiler's sampled split with this one.
// Usage: Split.exe [SECONDS=2]   Prints `split <Name> <percent>` lines.

using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;

namespace Acme
{
    static class Split
    {
        static double sink;

        // Each slice spins until its share of the slice time has passed, so the split holds
        // whatever the machine's speed.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Heavy(long ticks) { Spin(ticks); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Medium(long ticks) { Spin2(ticks); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Light(long ticks) { Spin3(ticks); }

        // Three copies so each method's samples land in its own body (no shared callee).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Spin(long ticks)
        {
            long end = Stopwatch.GetTimestamp() + ticks;
            double x = 1.0;
            while (Stopwatch.GetTimestamp() < end)
                for (int i = 0; i < 4000; i++) x = x * 1.0000001 + 0.5;
            sink += x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Spin2(long ticks)
        {
            long end = Stopwatch.GetTimestamp() + ticks;
            double x = 1.0;
            while (Stopwatch.GetTimestamp() < end)
                for (int i = 0; i < 4000; i++) x = x * 1.0000001 + 0.5;
            sink += x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Spin3(long ticks)
        {
            long end = Stopwatch.GetTimestamp() + ticks;
            double x = 1.0;
            while (Stopwatch.GetTimestamp() < end)
                for (int i = 0; i < 4000; i++) x = x * 1.0000001 + 0.5;
            sink += x;
        }

        static int Main(string[] args)
        {
            double seconds = args.Length > 0 ? double.Parse(args[0], CultureInfo.InvariantCulture) : 2.0;
            long slice = Stopwatch.Frequency / 200; // 5 ms slices
            long[] spent = new long[3];
            long stop = Stopwatch.GetTimestamp() + (long)(seconds * Stopwatch.Frequency);
            while (Stopwatch.GetTimestamp() < stop)
            {
                long t0 = Stopwatch.GetTimestamp();
                Heavy(slice * 50 / 100);
                long t1 = Stopwatch.GetTimestamp();
                Medium(slice * 30 / 100);
                long t2 = Stopwatch.GetTimestamp();
                Light(slice * 20 / 100);
                long t3 = Stopwatch.GetTimestamp();
                spent[0] += t1 - t0;
                spent[1] += t2 - t1;
                spent[2] += t3 - t2;
            }
            double total = spent[0] + spent[1] + spent[2];
            string[] names = { "Acme.Split.Spin", "Acme.Split.Spin2", "Acme.Split.Spin3" };
            for (int i = 0; i < 3; i++)
                Console.WriteLine("split {0} {1}", names[i], (100.0 * spent[i] / total).ToString("F2", CultureInfo.InvariantCulture));
            return sink > 0 ? 0 : 1;
        }
    }
}
