// Shift.cs: two runs to compare with `sonde diff` (crates/cli/tests/diff.rs). Parse and Sort
// burn CPU in units of equal work: `Shift.exe PARSE SORT [extra]` calls Parse PARSE times and
// Sort SORT times, and Extra once when a third argument is given (a unit is about 0.15 s).
// Prints `done`. (No digit separators in literals: mcs misreads them.)

using System;
using System.Runtime.CompilerServices;

namespace Acme
{
    static class Shift
    {
        static double sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static double Burn(int seed)
        {
            double x = seed;
            for (int i = 0; i < 60000000; i++) x = x * 1.0000001 + (i & 7);
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Parse() { sink += Burn(1); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Sort() { sink += Burn(2); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Extra() { sink += Burn(3); }

        static void Main(string[] args)
        {
            int parse = int.Parse(args[0]), sort = int.Parse(args[1]);
            for (int i = 0; i < parse; i++) Parse();
            for (int i = 0; i < sort; i++) Sort();
            if (args.Length > 2) Extra();
            Console.WriteLine(sink > 0 ? "done" : "none");
        }
    }
}
