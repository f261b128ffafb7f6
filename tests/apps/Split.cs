// Split.cs: known work split for sampling-accuracy tests. Three methods burn CPU in fixed
// proportions of the thread's CPU time, interleaved in small slices; the program measures each
// method's own CPU time (the thread's CPU-time clock) and wall time (Stopwatch) and prints both
// splits, so a test can compare the profiler's sampled split with the one for its clock. Slicing
// and measuring by CPU time keeps the CPU split exact however often the machine preempts the
// program (other tests running beside it); the wall split then includes the preemptions, as
// wall-clock samples do.
// Usage: Split.exe [CPU_SECONDS=2]   Prints `split <Name> <percent>` (CPU time) and
//                                     `wall-split <Name> <percent>` lines.

using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Acme
{
    static class Split
    {
        static double sink;

        [StructLayout(LayoutKind.Sequential)]
        struct Timespec
        {
            public long sec;
            public long nsec;
        }

        [DllImport("libc.so.6")]
        static extern int clock_gettime(int clock, out Timespec ts);

        /// This thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
        static long CpuNs()
        {
            Timespec ts;
            clock_gettime(3, out ts);
            return ts.sec * 1000000000L + ts.nsec;
        }

        // Each slice spins until the thread has run for its share of the slice, so the split holds
        // whatever the machine's speed and load.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Heavy(long ns) { Spin(ns); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Medium(long ns) { Spin2(ns); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Light(long ns) { Spin3(ns); }

        // Three copies so each method's samples land in its own body (no shared callee). The
        // clock is read every 20,000 iterations (~20 µs): reading a thread's CPU clock is a
        // system call, whose samples land in libc, not in the method.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Spin(long ns)
        {
            long end = CpuNs() + ns;
            double x = 1.0;
            while (CpuNs() < end)
                for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
            sink += x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Spin2(long ns)
        {
            long end = CpuNs() + ns;
            double x = 1.0;
            while (CpuNs() < end)
                for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
            sink += x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Spin3(long ns)
        {
            long end = CpuNs() + ns;
            double x = 1.0;
            while (CpuNs() < end)
                for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
            sink += x;
        }

        static void Print(string label, string[] names, long[] spent)
        {
            double total = spent[0] + spent[1] + spent[2];
            for (int i = 0; i < 3; i++)
                Console.WriteLine("{0} {1} {2}", label, names[i], (100.0 * spent[i] / total).ToString("F2", CultureInfo.InvariantCulture));
        }

        static int Main(string[] args)
        {
            double seconds = args.Length > 0 ? double.Parse(args[0], CultureInfo.InvariantCulture) : 2.0;
            long slice = 5000000; // 5 ms of CPU time per slice
            long[] cpu = new long[3];
            long[] wall = new long[3];
            long stop = CpuNs() + (long)(seconds * 1e9);
            while (CpuNs() < stop)
            {
                long c0 = CpuNs(), w0 = Stopwatch.GetTimestamp();
                Heavy(slice * 50 / 100);
                long c1 = CpuNs(), w1 = Stopwatch.GetTimestamp();
                Medium(slice * 30 / 100);
                long c2 = CpuNs(), w2 = Stopwatch.GetTimestamp();
                Light(slice * 20 / 100);
                long c3 = CpuNs(), w3 = Stopwatch.GetTimestamp();
                cpu[0] += c1 - c0; cpu[1] += c2 - c1; cpu[2] += c3 - c2;
                wall[0] += w1 - w0; wall[1] += w2 - w1; wall[2] += w3 - w2;
            }
            string[] names = { "Acme.Split.Spin", "Acme.Split.Spin2", "Acme.Split.Spin3" };
            Print("split", names, cpu);
            Print("wall-split", names, wall);
            return sink > 0 ? 0 : 1;
        }
    }
}
