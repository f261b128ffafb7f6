// The error simulator's test program (crates/cli/tests/inject.rs, docs/INJECT.md).
//
// `Db.Query` is called 10 times by `Service.Fetch`, which catches TimeoutException; `Db.Save`
// is called 3 times by `Service.Store`, which catches IOException only around the second call
// (`Main` catches the others). With no rule the program prints "fetched 10 failed 0 / stored 3"
// and exits 0. `Fragile.Run` has no handler anywhere: a fault injected there kills the program
// when its argument is "fragile". With "file PATH" it also reads PATH through the framework's
// File.ReadAllText (precompiled code) and reports an IOException.
using System;
using System.IO;
using System.Runtime.CompilerServices;

namespace Acme
{
    public class DbUnavailableException : Exception
    {
        public DbUnavailableException() : base("the database is unavailable") { }
    }

    public static class Db
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Query(int id)
        {
            return id * 2;
        }

        // Small enough to be inlined by an optimising compilation (DOTNET_TieredCompilation=0
        // compiles its caller optimised at once): only the agent keeps it a call of its own.
        public static int Save(int id)
        {
            return id + 1;
        }
    }

    public static class Service
    {
        public static int Failed;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Fetch(int id)
        {
            try
            {
                return Db.Query(id);
            }
            catch (TimeoutException)
            {
                Failed++;
                return -1;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Store(int id)
        {
            if (id == 2)
            {
                try
                {
                    return Db.Save(id);
                }
                catch (IOException)
                {
                    return -1;
                }
            }
            return Db.Save(id);
        }
    }

    public static class Fragile
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Run()
        {
            return 7;
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            int fetched = 0;
            for (int i = 1; i <= 10; i++)
            {
                if (Service.Fetch(i) >= 0)
                {
                    fetched++;
                }
            }
            int stored = 0, storeFailed = 0;
            for (int i = 1; i <= 3; i++)
            {
                try
                {
                    if (Service.Store(i) >= 0)
                    {
                        stored++;
                    }
                }
                catch (Exception e)
                {
                    storeFailed++;
                    Console.WriteLine("store " + i + ": " + e.GetType().FullName);
                }
            }
            Console.WriteLine("fetched " + fetched + " failed " + Service.Failed + " / stored " + stored);
            if (args.Length > 1 && args[0] == "file")
            {
                try
                {
                    Console.WriteLine("read " + File.ReadAllText(args[1]).Length);
                }
                catch (IOException e)
                {
                    Console.WriteLine("read failed: " + e.GetType().FullName);
                }
            }
            if (args.Length > 0 && args[0] == "fragile")
            {
                Console.WriteLine("fragile " + Fragile.Run());
            }
            return 0;
        }
    }
}
