// Source lines (crates/cli/tests/lines.rs): a CPU-bound method whose work is on one line, the
// line marked `// HOT`; the first statement of each method is marked `// FIRST <method>`. The
// tests find the line numbers from the markers, so the file can be edited freely.
//
//   Lines.exe [calls]   runs Work(2,000,000) `calls` times (default 150)
using System;

static class Lines
{
    static int Main(string[] args)
    {
        int calls = args.Length > 0 ? int.Parse(args[0]) : 150; // FIRST Main
        long sum = 0;
        for (int c = 0; c < calls; c++)
        {
            sum += Work(2000000 + c);
        }
        Console.WriteLine("sum " + sum);
        return 0;
    }

    // Called often enough to be compiled at every tier, with a loop long enough for on-stack
    // replacement in its first calls.
    static long Work(int n)
    {
        long acc = 17; // FIRST Work
        for (int i = 1; i < n; i++)
        {
            acc = (acc * 31 + i) % 1000003 + (acc >> 7); // HOT
        }
        return acc;
    }
}
