// Finalizers.cs PATH: 150 objects with a finalizer that appends one line to PATH. 100 are
// collected and finalized while Main runs; the last 50 are still waiting when Main returns, so
// the runtime finalizes them during its shutdown (Mono does). The file then holds one line per
// finalizer that really ran, to compare with a profiler's count of Acme.Finalized.Finalize.

using System;
using System.IO;

namespace Acme
{
    class Finalized
    {
        static string path;
        readonly int id;

        public Finalized(int id) { this.id = id; }

        ~Finalized()
        {
            lock (typeof(Finalized))
                File.AppendAllText(path, id + "\n");
        }

        static void Make(int from, int count)
        {
            for (int i = from; i < from + count; i++)
                new Finalized(i);
        }

        static void Main(string[] args)
        {
            path = args[0];
            Make(0, 100);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            Make(100, 50);
            Console.WriteLine("returning");
        }
    }
}
