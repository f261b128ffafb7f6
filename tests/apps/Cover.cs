// Cover.cs: coverage mode's target (crates/cli/tests/coverage.rs). Each line marked `// HITS n`
// runs exactly n times; each marked `// NEVER` never runs. Prints `done 42`.

using System;

namespace Acme
{
    static class Cover
    {
        static int Classify(int i)
        {
            if (i % 3 == 0)
            {
                return 3; // HITS 4
            }
            return 1; // HITS 6
        }

        static int Guarded(int i)
        {
            try
            {
                if (i > 100) throw new InvalidOperationException("big"); // HITS 2
                return i;
            }
            catch (InvalidOperationException)
            {
                return -1; // HITS 1
            }
        }

        static int Unused(int i)
        {
            return i * 2; // NEVER
        }

        static int Main(string[] args)
        {
            int sum = 0;
            for (int i = 0; i < 10; i++)
            {
                sum += Classify(i); // HITS 10
            }
            sum += Guarded(7);
            sum += Guarded(1000);
            if (args.Length > 5)
            {
                sum += Unused(sum); // NEVER
            }
            Console.WriteLine("done " + sum);
            return 0;
        }
    }
}
