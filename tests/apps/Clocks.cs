// Reads the clock in a hot loop: Stopwatch.GetTimestamp, which both runtimes serve with
// clock_gettime, itself served by the kernel's vDSO (code mapped into the process that no file
// holds), for crates/cli/tests/native_symbols.rs.
//
//   Clocks.exe [MILLISECONDS]   reads the clock for that long of the process's CPU time
//                               (default 1000), then prints `reads N`
using System;
using System.Diagnostics;

static class Clocks
{
    static int Main(string[] args)
    {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 1000;
        var process = Process.GetCurrentProcess();
        var start = process.TotalProcessorTime;
        long reads = 0, sum = 0;
        do
        {
            for (int i = 0; i < 20000; i++)
            {
                sum += Stopwatch.GetTimestamp() & 1;
            }
            reads += 20000;
            process.Refresh();
        } while ((process.TotalProcessorTime - start).TotalMilliseconds < ms);
        Console.WriteLine("reads " + reads + " " + (sum >= 0));
        return 0;
    }
}
