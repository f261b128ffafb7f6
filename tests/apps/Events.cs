// Events.cs: runtime events in known numbers, for `crates/cli/tests/events.rs`.
//
// `Events.exe N` throws N InvalidOperationExceptions, each caught by a typed catch; N
// Acme.Events+ParseError, half caught by a `when` filter that accepts and the other half (which
// the filter rejects) by the catch around it; and N/2 Acme.Events+ParseError+Deep that nobody
// catches on the way up to a catch-all two frames out. Then it collects: 5 × GC.Collect(0),
// 3 × GC.Collect(1), 2 × GC.Collect(2), and allocates 64 MB in 8 KB arrays (gen0 collections
// of its own). It prints what it did and what the runtime counted:
//   thrown InvalidOperationException N caught N
//   thrown ParseError N caught N
//   thrown Deep N/2 caught N/2
//   collections C0 C1 C2       (GC.CollectionCount(0), (1), (2) at the end)
//   max-generation G

using System;

namespace Acme
{
    static class Events
    {
        class ParseError : Exception
        {
            public ParseError(string message) : base(message) { }

            public class Deep : Exception
            {
                public Deep() : base("deep") { }
            }
        }

        static void ThrowDeep(int depth)
        {
            if (depth == 0)
                throw new ParseError.Deep();
            ThrowDeep(depth - 1);
        }

        static long keep;

        static int Main(string[] args)
        {
            int n = int.Parse(args[0]);
            int caught = 0;
            for (int i = 0; i < n; i++)
            {
                try { throw new InvalidOperationException("iteration " + i); }
                catch (InvalidOperationException) { caught++; }
            }
            Console.WriteLine("thrown InvalidOperationException " + n + " caught " + caught);

            caught = 0;
            for (int i = 0; i < n; i++)
            {
                try
                {
                    try { throw new ParseError("token " + i); }
                    catch (ParseError) when (i % 2 == 0) { caught++; }
                }
                catch (ParseError) { caught++; }
            }
            Console.WriteLine("thrown ParseError " + n + " caught " + caught);

            caught = 0;
            for (int i = 0; i < n / 2; i++)
            {
                try { ThrowDeep(3); }
                catch (Exception) { caught++; }
            }
            Console.WriteLine("thrown Deep " + (n / 2) + " caught " + caught);

            for (int i = 0; i < 5; i++) GC.Collect(0);
            for (int i = 0; i < 3; i++) GC.Collect(1);
            for (int i = 0; i < 2; i++) GC.Collect(2);
            for (int i = 0; i < 8192; i++)
            {
                var chunk = new byte[8192];
                chunk[i % 8192] = 1;
                keep += chunk.Length;
            }
            Console.WriteLine("collections " + GC.CollectionCount(0) + " " + GC.CollectionCount(1) + " " + GC.CollectionCount(2));
            Console.WriteLine("max-generation " + GC.MaxGeneration);
            return 0;
        }
    }
}
