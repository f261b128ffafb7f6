// Just-my-code views: user code called back by the framework. Sorts lists with a comparison of
// its own for about ARG milliseconds (default 800), so stacks run Main → List.Sort → (the
// framework's sort helpers) → Compare.
using System;
using System.Collections.Generic;
using System.Diagnostics;

namespace Acme
{
    static class Jmc
    {
        static int calls;

        static int Compare(int a, int b)
        {
            calls++;
            int x = a % 1000, y = b % 1000;
            for (int i = 0; i < 20; i++) { x = (x * 31 + 7) % 1009; y = (y * 31 + 7) % 1009; }
            return x.CompareTo(y);
        }

        static int Main(string[] args)
        {
            int ms = args.Length > 0 ? int.Parse(args[0]) : 800;
            var random = new Random(1);
            var clock = Stopwatch.StartNew();
            while (clock.ElapsedMilliseconds < ms)
            {
                var list = new List<int>();
                for (int i = 0; i < 20000; i++) list.Add(random.Next());
                list.Sort(Compare);
            }
            Console.WriteLine("done " + (calls > 0));
            return 0;
        }
    }
}
