// Work.cs: a program that keeps the runtime busy on its behalf, for `crates/cli/tests/runtime_work.rs`.
//
// `Work.exe jit N` emits a type of N large methods (Reflection.Emit, in memory: Acme.Generated.M0
// … M{N-1}, each a long run of arithmetic on a dozen locals) and calls each once through a
// delegate from `Acme.Work.CallEach`, so the JIT compiles them one after the other under it.
// `Work.exe gc N` fills a heap with a million small live objects, then calls `GC.Collect()` N
// times from `Acme.Work.Collect`: full blocking collections on this thread.
// Prints `jit N SUM` or `gc N`.

using System;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;

namespace Acme
{
    class Cell
    {
        public Cell Next;
        public int Value;
    }

    static class Work
    {
        /// Arithmetic steps per generated method: enough for the JIT to take a while over each.
        const int Steps = 3000;
        const int Locals = 12;

        static Cell live;

        static int Main(string[] args)
        {
            string what = args.Length > 0 ? args[0] : "jit";
            int n = args.Length > 1 ? int.Parse(args[1]) : 200;
            if (what == "jit")
            {
                Func<int, int>[] methods = Emit(n);
                Console.WriteLine("jit " + n + " " + CallEach(methods));
            }
            else
            {
                Fill(1000000);
                Collect(n);
                Console.WriteLine("gc " + n);
            }
            return 0;
        }

        /// N static methods `int M(int)` in a type of a module that exists in memory only.
        static Func<int, int>[] Emit(int n)
        {
            AssemblyBuilder assembly =
                AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("Acme.Generated"), AssemblyBuilderAccess.Run);
            ModuleBuilder module = assembly.DefineDynamicModule("Acme.Generated");
            TypeBuilder type = module.DefineType("Acme.Generated", TypeAttributes.Public | TypeAttributes.Class);
            for (int m = 0; m < n; m++)
            {
                MethodBuilder method = type.DefineMethod(
                    "M" + m, MethodAttributes.Public | MethodAttributes.Static, typeof(int), new[] { typeof(int) });
                Body(method.GetILGenerator(), m);
            }
            Type built = type.CreateType();
            var methods = new Func<int, int>[n];
            for (int m = 0; m < n; m++)
            {
                MethodInfo info = built.GetMethod("M" + m);
                methods[m] = (Func<int, int>)Delegate.CreateDelegate(typeof(Func<int, int>), info);
            }
            return methods;
        }

        /// `locals[i] = locals[j] * k + locals[l] ^ arg`, Steps times, then their sum: straight-line
        /// code with many live values, which the JIT's register allocator works through.
        static void Body(ILGenerator il, int seed)
        {
            var locals = new LocalBuilder[Locals];
            for (int i = 0; i < Locals; i++)
            {
                locals[i] = il.DeclareLocal(typeof(int));
                il.Emit(OpCodes.Ldarg_0);
                il.Emit(OpCodes.Ldc_I4, i + seed);
                il.Emit(OpCodes.Add);
                il.Emit(OpCodes.Stloc, locals[i]);
            }
            uint state = (uint)seed * 2654435761u + 1;
            for (int s = 0; s < Steps; s++)
            {
                state = state * 1103515245u + 12345u;
                int to = (int)(state >> 8) % Locals, a = (int)(state >> 12) % Locals, b = (int)(state >> 16) % Locals;
                il.Emit(OpCodes.Ldloc, locals[a]);
                il.Emit(OpCodes.Ldc_I4, (int)(state >> 20) | 1);
                il.Emit(OpCodes.Mul);
                il.Emit(OpCodes.Ldloc, locals[b]);
                il.Emit(OpCodes.Add);
                il.Emit(OpCodes.Ldarg_0);
                il.Emit(OpCodes.Xor);
                il.Emit(OpCodes.Stloc, locals[to]);
            }
            il.Emit(OpCodes.Ldloc, locals[0]);
            for (int i = 1; i < Locals; i++)
            {
                il.Emit(OpCodes.Ldloc, locals[i]);
                il.Emit(OpCodes.Add);
            }
            il.Emit(OpCodes.Ret);
        }

        /// Each call compiles its method first (the JIT runs under this frame).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int CallEach(Func<int, int>[] methods)
        {
            int sum = 0;
            foreach (Func<int, int> method in methods)
                sum += method(sum & 0xff);
            return sum;
        }

        static void Fill(int count)
        {
            for (int i = 0; i < count; i++)
                live = new Cell { Next = live, Value = i };
        }

        /// Full collections of a heap of `Fill`'s objects, on this thread.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Collect(int times)
        {
            for (int i = 0; i < times; i++)
                GC.Collect();
            GC.KeepAlive(live);
        }
    }
}
