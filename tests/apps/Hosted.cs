// Hosted.cs: .NET code run by a host that never shuts the runtime down — Python with pythonnet
// (tests/apps/host.py). Acme.Hosted.Work spins for the given milliseconds calling Step; Main only
// lets the same file run on its own.

using System.Diagnostics;

namespace Acme
{
    public static class Hosted
    {
        static long Step(long x) { return x * 31 + 7; }

        public static long Work(int ms)
        {
            var watch = Stopwatch.StartNew();
            long acc = 0;
            while (watch.ElapsedMilliseconds < ms)
                for (int i = 0; i < 10000; i++) acc = Step(acc);
            return acc;
        }

        static void Main(string[] args)
        {
            System.Console.WriteLine("result " + Work(args.Length > 0 ? int.Parse(args[0]) : 100));
        }
    }
}
