// Throws.cs: throws and catches an exception every 250 ms for about 4 s, after building a call
// tree of ~5,000 nodes (a 5,000-deep alternating recursion) so that every snapshot is large. It
// times each throw and prints `pid N` and `ready` before the first and `slowest-throw-ms N` at the end. A
// profiler must not make a throw wait for its controller, whatever the controller does.

using System;
using System.Diagnostics;
using System.Threading;

static class Throws
{
    static int Ping(int n) { return n == 0 ? 0 : Pong(n - 1) + 1; }
    static int Pong(int n) { return n == 0 ? 0 : Ping(n - 1) + 1; }

    static void Fail(int i) { throw new InvalidOperationException("throw " + i); }

    static int Main(string[] args)
    {
        int depth = args.Length > 0 ? int.Parse(args[0]) : 5000;
        var t = new Thread(() => Console.WriteLine("depth " + Ping(depth)), 16 << 20);
        t.Start();
        t.Join();
        Console.WriteLine("pid " + Process.GetCurrentProcess().Id);
        Console.WriteLine("ready");
        double slowest = 0;
        int caught = 0;
        for (int i = 0; i < 16; i++)
        {
            Thread.Sleep(250);
            var watch = Stopwatch.StartNew();
            try { Fail(i); } catch (InvalidOperationException) { caught++; }
            slowest = Math.Max(slowest, watch.Elapsed.TotalMilliseconds);
        }
        Console.WriteLine("caught " + caught);
        Console.WriteLine("slowest-throw-ms " + (int)Math.Ceiling(slowest));
        return 0;
    }
}
