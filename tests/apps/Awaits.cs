// Awaits: an await-heavy program, for what `--async` costs (scripts/bench-async.py).
//
//   Awaits.exe N [WORK]   (defaults 100000, 200)
//
// Serves N requests one after another through an async chain of four methods —
// Main → HandleAsync → LoadAsync → ReadAsync — whose innermost one awaits Task.Yield, so each
// request suspends four awaits and resumes them on the thread pool; each does WORK iterations of
// arithmetic. N = 0 runs the start-up alone. Prints "requests N sum S"; exits 0.

using System;
using System.Threading.Tasks;

namespace Acme
{
    public static class Awaits
    {
        static int work;

        static long Compute(int i)
        {
            long x = i;
            for (int k = 0; k < work; k++) x = x * 31 + k;
            return x;
        }

        static async Task<long> ReadAsync(int i)
        {
            await Task.Yield();
            return Compute(i);
        }

        static async Task<long> LoadAsync(int i)
        {
            long r = await ReadAsync(i);
            return r + 1;
        }

        static async Task<long> HandleAsync(int i)
        {
            long r = await LoadAsync(i);
            return r ^ 3;
        }

        static async Task<long> ServeAsync(int n)
        {
            long sum = 0;
            for (int i = 0; i < n; i++) sum += await HandleAsync(i);
            return sum;
        }

        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0]) : 100000;
            work = args.Length > 1 ? int.Parse(args[1]) : 200;
            long sum = ServeAsync(n).Result;
            Console.WriteLine("requests " + n + " sum " + sum);
            return 0;
        }
    }
}
