// A program whose sequence points the sonde-symbols tests know by line. Lines the tests look
// up are marked with `// @name`; the tests find them by marker, so this file may be edited
// freely as long as each marker stays on the line it describes.
using System;
using System.Reflection;

namespace Acme
{
    public static class Lines
    {
        public static int Main(string[] args)
        { // @main-open
            if (args.Length == 1 && args[0] == "--methods") // @main-first
            {
                PrintMethods();
                return 0;
            }
            int total = Loop(10);
            total += new Outer.Inner(3).Twice(total);
            Func<int, int> square = n => n * n; // @lambda
            total += square(total);
            return total == 0 ? 1 : 0; // @main-last
        } // @main-close

        // A loop whose body is one line.
        public static int Loop(int count)
        { // @loop-open
            int sum = 0; // @loop-first
            for (int i = 0; i < count; i++) // @loop-for
            {
                sum += i * 2; // @loop-body
            }
            return sum; // @loop-last
        } // @loop-close

        // Every method of this assembly: token, IL size and name, as the runtime sees them.
        static void PrintMethods()
        {
            foreach (Type type in typeof(Lines).Assembly.GetTypes()) // @print-first
            {
                BindingFlags all = BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static
                    | BindingFlags.Instance | BindingFlags.DeclaredOnly;
                foreach (MethodBase method in type.GetMethods(all))
                    Print(method);
                foreach (MethodBase method in type.GetConstructors(all))
                    Print(method);
            }
        }

        static void Print(MethodBase method)
        {
            MethodBody body = method.GetMethodBody(); // @print-method-first
            int size = body == null ? 0 : body.GetILAsByteArray().Length;
            Console.WriteLine("0x{0:x8} {1} {2}.{3}", method.MetadataToken, size, method.DeclaringType.FullName, method.Name);
        }
    }

    public class Outer
    {
        public class Inner
        {
            readonly int factor;

            public Inner(int factor) // @inner-ctor
            {
                this.factor = factor; // @inner-ctor-first
            } // @inner-ctor-close

            public int Twice(int value)
            { // @twice-open
                int doubled = value * 2 * factor; // @twice-first
                return doubled; // @twice-last
            } // @twice-close
        }
    }
}
