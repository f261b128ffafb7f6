// For the live-view benchmark (scripts/bench-live.sh): a program with a large call tree: M0..M3 call each other in every order, 8 deep (4^8 = 65,536
// distinct call paths), over and over until the file named by its argument exists.
using System;
using System.IO;
using System.Runtime.CompilerServices;

static class Wide
{
    static long sink;
    [MethodImpl(MethodImplOptions.NoInlining)] static void M0(int d, int p) { Next(d, p); }
    [MethodImpl(MethodImplOptions.NoInlining)] static void M1(int d, int p) { Next(d, p); }
    [MethodImpl(MethodImplOptions.NoInlining)] static void M2(int d, int p) { Next(d, p); }
    [MethodImpl(MethodImplOptions.NoInlining)] static void M3(int d, int p) { Next(d, p); }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Next(int d, int p)
    {
        if (d == 0) { for (int i = 0; i < 200; i++) sink = sink * 31 + i; return; }
        switch ((p >> (2 * d)) & 3)
        {
            case 0: M0(d - 1, p); break;
            case 1: M1(d - 1, p); break;
            case 2: M2(d - 1, p); break;
            default: M3(d - 1, p); break;
        }
    }
    static void Main(string[] args)
    {
        while (!File.Exists(args[0]))
            for (int p = 0; p < 65536 * 4; p += 4) Next(8, p);
        Console.WriteLine("done");
    }
}
