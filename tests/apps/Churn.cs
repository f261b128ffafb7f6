// Churn.cs: a program that creates and retires threads all day, as services do. It starts
// THREADS short-lived threads one after the other (each allocates an array, as any thread does
// some, spins for WORK_US microseconds of its own CPU time, then ends), printing its resident memory (VmRSS) after 1,000 threads and after the
// last one, then works for HOT_MS milliseconds of CPU time on one more thread, in a method of its
// own (HotLoopOfChurn), and prints the CPU time that thread used.
// Usage: Churn.exe [THREADS=1100] [WORK_US=200] [HOT_MS=1000]
// Prints `rss THREADS KB` lines and `hot_cpu_ms MS`.

using System;
using System.IO;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Acme
{
    static class Churn
    {
        static double sink;
        static object last;

        [StructLayout(LayoutKind.Sequential)]
        struct Timespec
        {
            public long sec;
            public long nsec;
        }

        [DllImport("libc.so.6")]
        static extern int clock_gettime(int clock, out Timespec ts);

        [DllImport("libc.so.6")]
        static extern int malloc_trim(UIntPtr pad);

        /// This thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
        static long CpuNs()
        {
            Timespec ts;
            clock_gettime(3, out ts);
            return ts.sec * 1000000000L + ts.nsec;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void LittleWork(long ns)
        {
            long end = CpuNs() + ns;
            double x = 1.0;
            while (CpuNs() < end)
            {
                for (int i = 0; i < 2000; i++) x = x * 1.0000001 + 1e-9;
            }
            sink += x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void HotLoopOfChurn(long ns)
        {
            long end = CpuNs() + ns;
            double x = 1.0;
            while (CpuNs() < end)
            {
                for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;
            }
            sink += x;
        }

        /// Resident memory in KB (VmRSS of /proc/self/status), after a full collection and with
        /// the free memory of malloc's arenas given back: what stays is memory in use, not
        /// garbage or fragmentation (which depend on timing).
        static long RssKb()
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            malloc_trim(UIntPtr.Zero);
            foreach (string line in File.ReadAllLines("/proc/self/status"))
            {
                if (line.StartsWith("VmRSS:"))
                {
                    string[] parts = line.Substring(6).Trim().Split(' ');
                    return long.Parse(parts[0]);
                }
            }
            return -1;
        }

        static int Main(string[] args)
        {
            int threads = args.Length > 0 ? int.Parse(args[0]) : 1100;
            long workNs = (args.Length > 1 ? long.Parse(args[1]) : 200) * 1000;
            long hotNs = (args.Length > 2 ? long.Parse(args[2]) : 1000) * 1000000;
            for (int t = 1; t <= threads; t++)
            {
                var th = new Thread(() =>
                {
                    last = new long[4];
                    LittleWork(workNs);
                });
                th.Name = "churn-" + t;
                th.Start();
                th.Join();
                // The runtime's own memory stays flat when garbage is collected as it goes.
                if (t % 100 == 0) GC.Collect();
                if (t == 1000 || t == threads) Console.WriteLine("rss {0} {1}", t, RssKb());
            }
            long hotCpu = 0;
            var hot = new Thread(() =>
            {
                long start = CpuNs();
                HotLoopOfChurn(hotNs);
                hotCpu = CpuNs() - start;
            });
            hot.Name = "hot";
            hot.Start();
            hot.Join();
            Console.WriteLine("hot_cpu_ms {0}", hotCpu / 1000000);
            return 0;
        }
    }
}
