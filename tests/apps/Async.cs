// Async: the names and stacks of compiler-generated code (issue 14).
//
//   Async.exe [MS]   (default 1500)
//
// For MS milliseconds, Main serves requests through an async chain of four methods —
// Main → HandleRequestAsync → LoadOrderAsync → ReadAsync — over Task.Yield and Task.Delay, so
// every continuation runs on a thread-pool thread and ReadAsync's CPU work (Parse) is sampled
// under the thread pool's dispatch loop, not under Main. Then it runs a lambda (Burn, called
// from a lambda passed to Task.Run), an iterator (Squares), and the same generic method over two
// value types (Table<Row>.Fill and Table<Col>.Fill: two native bodies, one metadata token).
// Prints "requests N" and "done"; exits 0. Builds with mcs (C# 6) and with Roslyn.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading.Tasks;

namespace Acme
{
    public struct Row { public int A; }
    public struct Col { public long B; }

    public class Table<T> where T : struct
    {
        public int Count;
        public T Last;

        public void Fill(int n, T value)
        {
            for (int i = 0; i < n; i++)
            {
                Count = (Count * 31 + i) ^ (Count >> 7);
                Last = value;
            }
        }
    }

    public static class Orders
    {
        static volatile int sink;

        // Spins for `ms` milliseconds of wall time.
        static int Burn(int ms)
        {
            var sw = Stopwatch.StartNew();
            int x = 0;
            while (sw.ElapsedMilliseconds < ms)
            {
                for (int i = 0; i < 10000; i++) x = x * 31 + i;
            }
            sink = x;
            return x;
        }

        static int Parse(int i)
        {
            return Burn(4) + i;
        }

        public static async Task<int> HandleRequestAsync(int i)
        {
            await Task.Yield();
            int n = await LoadOrderAsync(i);
            return n + 1;
        }

        static async Task<int> LoadOrderAsync(int i)
        {
            await Task.Delay(1);
            return await ReadAsync(i);
        }

        static async Task<int> ReadAsync(int i)
        {
            await Task.Yield();
            return Parse(i);
        }

        static IEnumerable<int> Squares(int n)
        {
            for (int i = 0; i < n; i++)
            {
                Burn(1);
                yield return i * i;
            }
        }

        static int Main(string[] args)
        {
            int ms = args.Length > 0 ? int.Parse(args[0]) : 1500;
            var sw = Stopwatch.StartNew();
            int requests = 0;
            while (sw.ElapsedMilliseconds < ms)
            {
                HandleRequestAsync(requests).Wait();
                requests++;
            }
            int burned = Task.Run(() => Burn(200)).Result;
            long squares = 0;
            foreach (int s in Squares(200)) squares += s;
            var rows = new Table<Row>();
            var cols = new Table<Col>();
            var watch = Stopwatch.StartNew();
            while (watch.ElapsedMilliseconds < 200)
            {
                rows.Fill(100000, new Row { A = 1 });
                cols.Fill(100000, new Col { B = 2 });
            }
            sink = burned + (int)squares + rows.Count + cols.Count;
            Console.WriteLine("requests " + requests);
            Console.WriteLine("done");
            return 0;
        }
    }
}
