// Bench.cs: the call-heavy benchmark Sonde's harness profiles to measure per-call overhead.
// Usage: Bench.exe [N=30] [REPS=1] [MODE=fib|loop]
//   fib:  REPS times the recursive Acme.Bench.Fib(N)  (2*fib(N+1)-1 calls per rep, deep stacks)
//   loop: the same number of calls, but flat: Acme.Bench.Loop calls Acme.Bench.Leaf in a loop
// Prints `calls=<calls in the timed part> elapsed_ms=<ms>`; the timed part allocates nothing.

using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;

namespace Acme
{
    static class Bench
    {
        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 30;
            int reps = args.Length > 1 ? int.Parse(args[1], CultureInfo.InvariantCulture) : 1;
            string mode = args.Length > 2 ? args[2] : "fib";
            if (n < 0 || n > 40 || reps < 1 || (mode != "fib" && mode != "loop"))
            {
                Console.Error.WriteLine("usage: Bench.exe [N (0..40)] [REPS >= 1] [fib|loop]");
                return 2;
            }

            long callsPerRep = FibCalls(n);
            long calls = callsPerRep * reps;
            long result = 0;

            Stopwatch sw = Stopwatch.StartNew();
            if (mode == "fib")
            {
                for (int r = 0; r < reps; r++)
                    result += Fib(n);
            }
            else
            {
                for (int r = 0; r < reps; r++)
                    result += Loop(callsPerRep);
            }
            sw.Stop();

            string ms = sw.Elapsed.TotalMilliseconds.ToString("F3", CultureInfo.InvariantCulture);
            Console.WriteLine("mode=" + mode + " n=" + n + " reps=" + reps + " result=" + result);
            Console.WriteLine("calls=" + calls + " elapsed_ms=" + ms);

            Console.WriteLine("expect-calls Acme.Bench.Main 1");
            Console.WriteLine("expect-calls Acme.Bench.FibCalls 1");
            if (mode == "fib")
            {
                Console.WriteLine("expect-calls Acme.Bench.Fib " + calls);
            }
            else
            {
                Console.WriteLine("expect-calls Acme.Bench.Loop " + reps);
                Console.WriteLine("expect-calls Acme.Bench.Leaf " + calls);
            }
            return 0;
        }

        // Recursive: Fib(n) makes 2*fib(n+1)-1 calls to itself in total.
        static int Fib(int n)
        {
            return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
        }

        static long Loop(long count)
        {
            long acc = 0;
            for (long i = 0; i < count; i++)
                acc += Leaf((int)i);
            return acc;
        }

        // NoInlining so that the baseline (no profiler) also makes real calls.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Leaf(int x)
        {
            return x & 1;
        }

        // Number of Fib calls made by Fib(n), computed without calling Fib.
        static long FibCalls(int n)
        {
            long a = 1, b = 1;   // calls for n = 0 and n = 1
            for (int i = 2; i <= n; i++)
            {
                long c = a + b + 1;
                a = b;
                b = c;
            }
            return n == 0 ? a : b;
        }
    }
}
