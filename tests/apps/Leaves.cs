// Hot leaf methods (they call nothing) under their real callers: sampled stacks must show
// Main → Alpha/Beta/Gamma and Main → Delta → Mix, whatever the JIT made of the frames —
// on-stack-replacement versions of the loops, a frameless `Mix`, samples in prologues and
// epilogues.
//
//   Leaves.exe MILLISECONDS     spins that long on the CPU (the process's CPU time, so that a
//                               loaded machine does not cut the samples short), round-robin over the four
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

static class Leaves
{
    static double Alpha(int n) { double s = 0; for (int i = 1; i < n; i++) s += Math.Sqrt(i) * 1.0001; return s; }

    static long Beta(int n) { long h = 17; for (int i = 0; i < n; i++) h = h * 31 + (i ^ (h >> 7)); return h; }

    static int Gamma(int n) { int c = 0; for (int i = 0; i < n; i++) if ((i * 2654435761u) >> 28 == 3) c++; return c; }

    // Small, no loop, no call: the JIT gives it no frame pointer once optimized.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Mix(int x) => (x * 31) ^ (x >> 3) ^ (x << 7);

    static int Delta(int n) { int h = 0; for (int i = 0; i < n; i++) h += Mix(i + h); return h; }

    static int Main(string[] args)
    {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 1500;
        var process = Process.GetCurrentProcess();
        var start = process.TotalProcessorTime;
        double total = 0;
        while ((process.TotalProcessorTime - start).TotalMilliseconds < ms)
        {
            process.Refresh();
            total += Alpha(200000);
            total += Beta(200000);
            total += Gamma(200000);
            total += Delta(200000);
        }
        Console.WriteLine(total != 0 ? "done" : "odd");
        return 0;
    }
}
