// A long-running "service" for attach tests (crates/cli/tests/attach.rs): started without Sonde,
// attached to and detached from while it runs.
//
//   Service.exe STOPFILE
//
// A worker thread (named "spinner") burns CPU in Service.Spin until the file STOPFILE exists;
// the main thread polls for it. Another thread ("parked") waits in Service.Park for the end,
// blocked on a monitor all along (what `sonde dump` must show). Prints "ready" once the worker runs, then, at the end, a result
// that does not depend on timing, and exits with 7. So a profiler that changed the program's
// behaviour shows in its output or exit code.
using System;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;

static class Service
{
    static volatile bool stop;
    static long sink;
    static readonly object gate = new object();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Spin(long seed)
    {
        long x = seed;
        for (int i = 0; i < 200000; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static void Work()
    {
        long acc = 0;
        while (!stop)
            acc ^= Spin(acc);
        sink = acc;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Park()
    {
        lock (gate)
        {
            while (!stop)
                Monitor.Wait(gate);
        }
    }

    // The same every run: what the program prints must not depend on how long it ran.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Result()
    {
        long x = 1;
        for (int i = 0; i < 1000; i++)
            x = x * 31 + i;
        return x;
    }

    static int Main(string[] args)
    {
        var worker = new Thread(Work) { Name = "spinner" };
        worker.Start();
        var parked = new Thread(Park) { Name = "parked" };
        parked.Start();
        Console.WriteLine("ready");
        Console.Out.Flush();
        while (!File.Exists(args[0]))
            Thread.Sleep(20);
        stop = true;
        lock (gate)
            Monitor.PulseAll(gate);
        worker.Join();
        parked.Join();
        Console.WriteLine("done " + Result());
        return 7;
    }
}
