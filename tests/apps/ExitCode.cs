// ExitCode.cs: Sonde test target for exit-code and stream pass-through.
// Writes one line to stdout and one to stderr, makes a few Acme calls, prints its
// expect-calls lines, and returns the exit code given as the first argument (default 3).
// Usage: ExitCode.exe [CODE]   (Linux truncates the code to 0..255)

using System;
using System.Globalization;

namespace Acme
{
    static class Arith
    {
        public static int Twice(int x) { return x * 2; }

        public static int SumTwice(int n)
        {
            int s = 0;
            for (int i = 1; i <= n; i++)
                s += Twice(i);
            return s;
        }
    }

    static class ExitCode
    {
        const int DefaultCode = 3;

        static int Main(string[] args)
        {
            int code = ParseCode(args);
            Console.WriteLine("stdout: exiting with code " + code);
            Console.Error.WriteLine("stderr: exiting with code " + code);

            int s = Arith.SumTwice(3) + Arith.SumTwice(4);   // Twice: 3 + 4 = 7 calls
            Console.WriteLine("sum=" + s);

            Console.WriteLine("expect-calls Acme.ExitCode.Main 1");
            Console.WriteLine("expect-calls Acme.ExitCode.ParseCode 1");
            Console.WriteLine("expect-calls Acme.Arith.SumTwice 2");
            Console.WriteLine("expect-calls Acme.Arith.Twice 7");
            return code;
        }

        static int ParseCode(string[] args)
        {
            int code;
            if (args.Length > 0 && int.TryParse(args[0], NumberStyles.Integer, CultureInfo.InvariantCulture, out code))
                return code;
            return DefaultCode;
        }
    }
}
