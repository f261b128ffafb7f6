// Calls.cs: the main exact-call-count target for Sonde's integration tests.
// It covers static, recursive, virtual, interface, generic, nested, inlinable,
// tail-recursive, exception-unwinding, Unicode-named and multi-threaded calls.
// It prints a few result lines, then `expect-calls <Name> <N>` lines for the test to compare.
//
// NOTE for the test: overloads and generic instantiations share one metadata name
// (e.g. Acme.Calls.Describe(int)/(string), Acme.Calls.Identity<int/double/string/object>,
// Acme.Node`1 over int/string/double). The profiler may report several entries with that
// name, so the test must SUM the profiler's entries that have the same name before comparing.
// Each name appears only once here, with the total.

using System;
using System.Text;
using System.Threading;

namespace Acme
{
    // Call counters. There are no field initializers, so this class has no .cctor.
    static class Tally
    {
        public static int Square, SumOfSquares, Fib, DescribeInt, DescribeString, Identity;
        public static int AnimalSpeak, DogSpeak, CatSpeak, CircleArea, RectArea;
        public static int NodeCtor, NodeLength, NodeGetValue, Nested;
        public static int Catcher, Frame3, Frame2, Frame1, Thrower, BoomCtor, Caught, Finally;
        public static int Gruesse, Keisan, WorkerCtor, WorkerRun, WorkerStep, Expect;
    }

    // Virtual calls through a base class with two overrides.
    class Animal
    {
        public virtual string Speak() { Tally.AnimalSpeak++; return "..."; }
    }

    class Dog : Animal
    {
        public override string Speak() { Tally.DogSpeak++; return "woof"; }
    }

    class Cat : Animal
    {
        // Also makes a non-virtual call to the base implementation.
        public override string Speak() { Tally.CatSpeak++; return "meow" + base.Speak(); }
    }

    // Interface calls: one interface, two implementations.
    interface IShape
    {
        double Area();
    }

    class Circle : IShape
    {
        readonly double r;
        public Circle(double r) { this.r = r; }
        public double Area() { Tally.CircleArea++; return 3.0 * r * r; }
    }

    class Rect : IShape
    {
        readonly double w, h;
        public Rect(double w, double h) { this.w = w; this.h = h; }
        public double Area() { Tally.RectArea++; return w * h; }
    }

    // Generic class: metadata name Acme.Node`1.
    class Node<T>
    {
        readonly T value;
        readonly Node<T> next;

        public Node(T value, Node<T> next)
        {
            Tally.NodeCtor++;
            this.value = value;
            this.next = next;
        }

        public T Value { get { Tally.NodeGetValue++; return value; } }

        public Node<T> Next { get { return next; } }

        // Recursive: one call per node in the list.
        public int Length()
        {
            Tally.NodeLength++;
            return 1 + (next == null ? 0 : next.Length());
        }
    }

    // Nested type: metadata name Acme.Outer+Inner.
    class Outer
    {
        public class Inner
        {
            public static int Nested(int x) { Tally.Nested++; return x * 3; }
        }
    }

    // An exception type of our own, so its constructor is counted too.
    class BoomException : Exception
    {
        public BoomException(string message) : base(message) { Tally.BoomCtor++; }
    }

    // Thrower throws; the exception unwinds through Frame1, Frame2 and Frame3
    // (three distinct intermediate methods) and is caught in Catcher.
    // The "+ 1" after each call keeps the calls out of tail position.
    static class Unwinder
    {
        public static int Catcher(int i, bool shouldThrow)
        {
            Tally.Catcher++;
            try
            {
                return Frame3(i, shouldThrow);
            }
            catch (BoomException)
            {
                Tally.Caught++;
                return -1;
            }
        }

        static int Frame3(int i, bool shouldThrow) { Tally.Frame3++; return Frame2(i, shouldThrow) + 1; }

        static int Frame2(int i, bool shouldThrow)
        {
            Tally.Frame2++;
            try
            {
                return Frame1(i, shouldThrow) + 1;
            }
            finally
            {
                Tally.Finally++;
            }
        }

        static int Frame1(int i, bool shouldThrow) { Tally.Frame1++; return Thrower(i, shouldThrow) + 1; }

        static int Thrower(int i, bool shouldThrow)
        {
            Tally.Thrower++;
            if (shouldThrow)
                throw new BoomException("boom " + i);
            return i;
        }
    }

    // Non-ASCII type and method names.
    static class Ünïcødé
    {
        public static string Grüße(string name) { Tally.Gruesse++; return "Grüße, " + name; }

        public static int 計算(int a, int b) { Tally.Keisan++; return a * 10 + b; }
    }

    // Several threads, each running Worker.Run, which calls Worker.Step.
    class Worker
    {
        public const int Steps = 10000;
        readonly int id;
        long acc;

        public Worker(int id) { Interlocked.Increment(ref Tally.WorkerCtor); this.id = id; }

        public long Result { get { return acc; } }

        public void Run()
        {
            Interlocked.Increment(ref Tally.WorkerRun);
            for (int i = 0; i < Steps; i++)
                Step(i);
        }

        void Step(int i)
        {
            Interlocked.Increment(ref Tally.WorkerStep);
            acc += i ^ id;
        }
    }

    static class Calls
    {
        const int Add1Loop = 1000000;
        const int FibArg = 20;
        const int EvenArg = 5000;   // IsEven(5000): chain of 5001 calls, depth 5001 at worst
        const int OddArg = 3001;    // IsOdd(3001): chain of 3002 calls
        const int Throws = 100;     // Catcher calls whose Thrower throws
        const int NoThrows = 20;    // Catcher calls that return normally
        const int Threads = 4;

        static void Main()
        {
            Console.OutputEncoding = new UTF8Encoding(false);

            // Plain static calls.
            int sumSq = SumOfSquares(100);
            Console.WriteLine("sum-of-squares(100)=" + sumSq);

            // Recursion.
            int fib = Fib(FibArg);
            Console.WriteLine("fib(" + FibArg + ")=" + fib);

            // Overloads (same name, two signatures).
            int described = Describe(1) + Describe(2) + Describe(3) + Describe("a") + Describe("bb");

            // Generic methods over value and reference types.
            int gi = Identity(1) + Identity(2) + Identity(3);
            double gd = Identity(1.5) + Identity(2.5);
            string gs = Identity("x") + Identity("y");
            object go = Identity((object)"z");
            Console.WriteLine("generic=" + gi + "," + gd + "," + gs + "," + go + " described=" + described);

            // Virtual calls.
            Animal[] zoo = { new Dog(), new Cat(), new Dog() };
            int speechLen = 0;
            for (int round = 0; round < 10; round++)
                foreach (Animal a in zoo)
                    speechLen += a.Speak().Length;

            // Interface calls.
            IShape[] shapes = { new Circle(1.0), new Rect(2.0, 3.0), new Circle(2.0) };
            double area = 0;
            for (int round = 0; round < 5; round++)
                foreach (IShape s in shapes)
                    area += s.Area();
            Console.WriteLine("speech=" + speechLen + " area=" + area);

            // Generic class over int, string and double.
            Node<int> ints = null;
            for (int i = 0; i < 10; i++)
                ints = new Node<int>(i, ints);
            Node<string> strs = new Node<string>("a", new Node<string>("b", new Node<string>("c", null)));
            Node<double> dbls = new Node<double>(1.0, new Node<double>(2.0, null));
            int intSum = 0;
            for (Node<int> n = ints; n != null; n = n.Next)
                intSum += n.Value;
            string firstStr = strs.Value;
            double firstDbl = dbls.Value;
            int lengths = ints.Length() + strs.Length() + dbls.Length();
            Console.WriteLine("nodes: sum=" + intSum + " first=" + firstStr + "," + firstDbl + " lengths=" + lengths);

            // Nested type.
            int nested = 0;
            for (int i = 0; i < 4; i++)
                nested += Outer.Inner.Nested(i);

            // Tiny inlinable method, 1,000,000 calls (its count comes from the loop bound).
            int acc = 0;
            for (int i = 0; i < Add1Loop; i++)
                acc = Add1(acc);
            Console.WriteLine("add1-loop=" + acc + " nested=" + nested);

            // Mutually recursive calls in tail position.
            bool even = IsEven(EvenArg);
            bool odd = IsOdd(OddArg);
            Console.WriteLine("is-even(" + EvenArg + ")=" + even + " is-odd(" + OddArg + ")=" + odd);

            // Exceptions unwinding through three frames.
            int caught = 0;
            for (int i = 0; i < Throws + NoThrows; i++)
                if (Unwinder.Catcher(i, i < Throws) < 0)
                    caught++;
            Console.WriteLine("caught=" + caught);

            // Unicode names.
            Console.WriteLine(Ünïcødé.Grüße("Welt") + " " + Ünïcødé.計算(4, 2));

            // Threads.
            Worker[] workers = new Worker[Threads];
            Thread[] threads = new Thread[Threads];
            for (int t = 0; t < Threads; t++)
            {
                workers[t] = new Worker(t);
                threads[t] = new Thread(workers[t].Run);
            }
            foreach (Thread th in threads)
                th.Start();
            foreach (Thread th in threads)
                th.Join();
            long threadSum = 0;
            foreach (Worker w in workers)
                threadSum += w.Result;
            Console.WriteLine("threads=" + Threads + " steps=" + Tally.WorkerStep + " sum=" + threadSum);

            // Expected counts.
            Expect(typeof(Calls), "Main", 1);
            Expect(typeof(Calls), nameof(SumOfSquares), Tally.SumOfSquares);
            Expect(typeof(Calls), nameof(Square), Tally.Square);
            Expect(typeof(Calls), nameof(Fib), Tally.Fib);
            Expect(typeof(Calls), nameof(Describe), Tally.DescribeInt + Tally.DescribeString);   // 2 overloads, summed
            Expect(typeof(Calls), nameof(Identity), Tally.Identity);   // 4 instantiations, summed
            Expect(typeof(Animal), nameof(Animal.Speak), Tally.AnimalSpeak);
            Expect(typeof(Dog), nameof(Dog.Speak), Tally.DogSpeak);
            Expect(typeof(Cat), nameof(Cat.Speak), Tally.CatSpeak);
            Expect(typeof(Animal), ".ctor", 3);   // implicit ctors, one per `new` in zoo
            Expect(typeof(Dog), ".ctor", 2);
            Expect(typeof(Cat), ".ctor", 1);
            Expect(typeof(Circle), nameof(Circle.Area), Tally.CircleArea);
            Expect(typeof(Rect), nameof(Rect.Area), Tally.RectArea);
            Expect(typeof(Circle), ".ctor", 2);
            Expect(typeof(Rect), ".ctor", 1);
            Expect(typeof(Node<>), ".ctor", Tally.NodeCtor);   // Node<int>, Node<string>, Node<double> summed
            Expect(typeof(Node<>), nameof(Node<int>.Length), Tally.NodeLength);
            Expect(typeof(Node<>), "get_Value", Tally.NodeGetValue);
            Expect(typeof(Outer.Inner), nameof(Outer.Inner.Nested), Tally.Nested);
            Expect(typeof(Calls), nameof(Add1), Add1Loop);
            // IsEven(5000) visits 5000,4999,...,0 alternating IsEven/IsOdd: IsEven 2501, IsOdd 2500.
            // IsOdd(3001) visits 3001,3000,...,0 alternating IsOdd/IsEven: IsOdd 1501, IsEven 1501.
            Expect(typeof(Calls), nameof(IsEven), (EvenArg / 2 + 1) + (OddArg + 1) / 2);
            Expect(typeof(Calls), nameof(IsOdd), EvenArg / 2 + (OddArg + 1) / 2);
            Expect(typeof(Unwinder), nameof(Unwinder.Catcher), Tally.Catcher);
            Expect(typeof(Unwinder), "Frame3", Tally.Frame3);
            Expect(typeof(Unwinder), "Frame2", Tally.Frame2);
            Expect(typeof(Unwinder), "Frame1", Tally.Frame1);
            Expect(typeof(Unwinder), "Thrower", Tally.Thrower);
            Expect(typeof(BoomException), ".ctor", Tally.BoomCtor);
            Expect(typeof(Ünïcødé), nameof(Ünïcødé.Grüße), Tally.Gruesse);
            Expect(typeof(Ünïcødé), nameof(Ünïcødé.計算), Tally.Keisan);
            Expect(typeof(Worker), ".ctor", Tally.WorkerCtor);
            Expect(typeof(Worker), nameof(Worker.Run), Tally.WorkerRun);
            Expect(typeof(Worker), "Step", Tally.WorkerStep);
            // Expect itself: every call so far, plus this one.
            Expect(typeof(Calls), nameof(Expect), Tally.Expect + 1);
        }

        static int Square(int x) { Tally.Square++; return x * x; }

        static int SumOfSquares(int n)
        {
            Tally.SumOfSquares++;
            int s = 0;
            for (int i = 1; i <= n; i++)
                s += Square(i);
            return s;
        }

        static int Fib(int n)
        {
            Tally.Fib++;
            return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
        }

        static int Describe(int x) { Tally.DescribeInt++; return x; }

        static int Describe(string s) { Tally.DescribeString++; return s.Length; }

        static T Identity<T>(T x) { Tally.Identity++; return x; }

        // Deliberately tiny and counter-free, so the JIT would inline it if allowed.
        static int Add1(int x) => x + 1;

        static bool IsEven(int n) => n == 0 ? true : IsOdd(n - 1);

        static bool IsOdd(int n) => n == 0 ? false : IsEven(n - 1);

        static void Expect(Type type, string method, long n)
        {
            Tally.Expect++;
            Console.WriteLine("expect-calls " + type.FullName + "." + method + " " + n);
        }
    }
}
