// Sleeper.cs: Sonde test target for Ctrl-C / signal handling.
// Prints "ready" (flushed), then calls Acme.Sleeper.Tick (a 20 ms sleep) in a loop
// until killed, or until MAX_SECONDS (first argument, default 30) have passed.
// It deliberately installs no CancelKeyPress or signal handler.

using System;
using System.Diagnostics;
using System.Globalization;
using System.Threading;

namespace Acme
{
    static class Sleeper
    {
        static void Main(string[] args)
        {
            double maxSeconds = 30;
            if (args.Length > 0)
                maxSeconds = double.Parse(args[0], CultureInfo.InvariantCulture);

            Console.WriteLine("ready");
            Console.Out.Flush();

            Stopwatch sw = Stopwatch.StartNew();
            long ticks = 0;
            while (sw.Elapsed.TotalSeconds < maxSeconds)
            {
                Tick();
                ticks++;
            }
            Console.WriteLine("done ticks=" + ticks);
        }

        static void Tick()
        {
            Thread.Sleep(20);
        }
    }
}
