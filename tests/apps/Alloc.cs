// Alloc.cs: allocations and lock waits in known amounts, for `crates/cli/tests/events.rs`.
//
// `Alloc.exe alloc [ROUNDS]` allocates (ROUNDS times, default once; 0 for none), each from its own method: 200,000 byte[1000] (AllocateBytes),
// 25,000 strings of 1000 chars (AllocateStrings), 1,000,000 small objects of two ints
// (AllocateSmall), keeping the last of each alive. It prints the sizes the runtime reports
// (GC.GetAllocatedBytesForCurrentThread around each method, where the runtime has it):
//   bytes AllocateBytes B        (B: the bytes that method allocated)
//   ...
// `Alloc.exe crowd THREADS ROUNDS` starts THREADS threads that each take one lock ROUNDS times,
// allocating inside it, and prints what they counted together (`counted N`: THREADS × ROUNDS).
// `Alloc.exe contend N MS` makes a worker thread wait N times for a lock the main thread holds
// for MS milliseconds, and prints the wait the worker measured itself:
//   waited NS

using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Acme
{
    class Small
    {
        public int A;
        public int B;
    }

    static class Alloc
    {
        static object keep;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void AllocateBytes()
        {
            for (int i = 0; i < 200000; i++)
            {
                var a = new byte[1000];
                a[i % 1000] = 1;
                keep = a;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void AllocateStrings()
        {
            for (int i = 0; i < 25000; i++)
                keep = new string((char)('a' + i % 26), 1000);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void AllocateSmall()
        {
            for (int i = 0; i < 1000000; i++)
                keep = new Small { A = i, B = i };
        }

        static void Measure(string name, Action action)
        {
            long before = GC.GetAllocatedBytesForCurrentThread();
            action();
            long after = GC.GetAllocatedBytesForCurrentThread();
            Console.WriteLine("bytes " + name + " " + (after - before));
        }

        static readonly object gate = new object();

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long WaitForLock(ManualResetEventSlim held)
        {
            held.Wait();
            held.Reset();
            var watch = Stopwatch.StartNew();
            lock (gate)
            {
                watch.Stop();
            }
            return watch.Elapsed.Ticks * 100;
        }

        static long counted;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void CrowdWork(int rounds)
        {
            for (int i = 0; i < rounds; i++)
            {
                lock (gate)
                {
                    keep = new byte[64 + i % 64];
                    counted++;
                }
            }
        }

        static int Crowd(int threads, int rounds)
        {
            var all = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                all[t] = new Thread(() => CrowdWork(rounds));
                all[t].Start();
            }
            foreach (var t in all)
                t.Join();
            Console.WriteLine("counted " + counted);
            return counted == (long)threads * rounds ? 0 : 1;
        }

        static int Main(string[] args)
        {
            if (args[0] == "alloc")
            {
                int rounds = args.Length > 1 ? int.Parse(args[1]) : 1;
                for (int r = 0; r < rounds; r++)
                {
                    Measure("AllocateBytes", AllocateBytes);
                    Measure("AllocateStrings", AllocateStrings);
                    Measure("AllocateSmall", AllocateSmall);
                }
                return 0;
            }
            if (args[0] == "crowd")
                return Crowd(int.Parse(args[1]), int.Parse(args[2]));
            int n = int.Parse(args[1]);
            int ms = int.Parse(args[2]);
            var held = new ManualResetEventSlim(false);
            long waited = 0;
            var worker = new Thread(() =>
            {
                for (int i = 0; i < n; i++)
                    waited += WaitForLock(held);
            });
            worker.Start();
            for (int i = 0; i < n; i++)
            {
                lock (gate)
                {
                    held.Set();
                    // The worker is now waiting (or about to): hold the lock for MS.
                    Thread.Sleep(ms);
                }
                // Let the worker take the lock before the next round.
                while (held.IsSet) Thread.Yield();
                Thread.Sleep(5);
            }
            worker.Join();
            Console.WriteLine("waited " + waited);
            return 0;
        }
    }
}
