// Stress.cs: many threads, exceptions and async code at once, with deterministic output and a
// chosen exit code, to check that profiling changes neither. Usage: Stress.exe [THREADS=64]
// Prints per-thread results in thread order, an async result, and exits with code 5.

using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace Acme
{
    static class Stress
    {
        static long Work(int seed)
        {
            long acc = seed;
            for (int i = 0; i < 20000; i++)
            {
                try
                {
                    if (i % 997 == 0) throw new InvalidOperationException("boom " + i);
                    acc = acc * 31 + i;
                }
                catch (InvalidOperationException e)
                {
                    acc ^= e.Message.Length;
                }
            }
            return acc;
        }

        static async Task<long> Chain(int depth)
        {
            if (depth == 0) return 1;
            await Task.Yield();
            long below = await Chain(depth - 1);
            return below + depth;
        }

        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0]) : 64;
            long[] results = new long[n];
            var threads = new List<Thread>();
            for (int t = 0; t < n; t++)
            {
                int id = t;
                var th = new Thread(() => { results[id] = Work(id); });
                th.Name = "stress-" + id;
                threads.Add(th);
                th.Start();
            }
            foreach (var th in threads) th.Join();
            for (int t = 0; t < n; t++) Console.WriteLine("thread {0}: {1}", t, results[t]);

            var tasks = new List<Task<long>>();
            for (int i = 0; i < 16; i++) tasks.Add(Chain(50 + i));
            Task.WaitAll(tasks.ToArray());
            long sum = 0;
            foreach (var task in tasks) sum += task.Result;
            Console.WriteLine("async: {0}", sum);
            Console.Error.WriteLine("stress done");
            return 5;
        }
    }
}
