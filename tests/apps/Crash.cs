// Crash.cs: Sonde test target for a process killed by an unhandled exception.
// It makes some Acme calls, prints a result line and its expect-calls lines (before
// crashing), then throws Acme.CrashTestException from Acme.Crash.Explode, unhandled.
// On Linux the .NET runtime then aborts: SIGABRT, i.e. exit status 134 in a shell.
// `Crash.exe after-handled` first throws and catches an exception, just before the crash (a
// profiler that snapshots on exceptions at most every so often must still keep the data).

using System;

namespace Acme
{
    class CrashTestException : Exception
    {
        public CrashTestException(string message) : base(message) { }
    }

    static class Crash
    {
        static void Main(string[] args)
        {
            bool afterHandled = args.Length > 0 && args[0] == "after-handled";
            int total = 0;
            for (int i = 0; i < 5; i++)
                total += Prepare(i);
            Console.WriteLine("prepared total=" + total);

            Console.WriteLine("expect-calls Acme.Crash.Main 1");
            Console.WriteLine("expect-calls Acme.Crash.Prepare 5");
            Console.WriteLine("expect-calls Acme.Crash.Detonate 1");
            Console.WriteLine("expect-calls Acme.Crash.Explode 1");
            Console.WriteLine("expect-calls Acme.CrashTestException..ctor " + (afterHandled ? 2 : 1));
            if (afterHandled)
                Console.WriteLine("expect-calls Acme.Crash.Probe 1");
            Console.Out.Flush();

            if (afterHandled)
                Probe();

            Detonate(total);
            Console.WriteLine("unreachable");
        }

        static int Prepare(int i) { return i * i; }

        static void Probe()
        {
            try { throw new CrashTestException("handled"); }
            catch (CrashTestException) { }
        }

        static void Detonate(int total) { Explode(total); Console.WriteLine("unreachable"); }

        static void Explode(int total)
        {
            throw new CrashTestException("Sonde crash test (total=" + total + ")");
        }
    }
}
