// Hostile.cs: a program whose names attack the terminal. A type and a method built at run time
// (System.Reflection.Emit accepts any string as a name) carry an OSC sequence that retitles the
// window, a CSI sequence that clears the screen, a C1 control, and a right-to-left override; the
// method spins long enough to top any profile. Prints `done` when finished.

using System;
using System.Reflection;
using System.Reflection.Emit;

static class Hostile
{
    const string Evil = "\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202Egnp.exe";

    static int Main()
    {
        var assembly = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("Hostile" + Evil), AssemblyBuilderAccess.Run);
        var module = assembly.DefineDynamicModule("Hostile" + Evil);
        var type = module.DefineType("T" + Evil, TypeAttributes.Public | TypeAttributes.Class | TypeAttributes.Abstract | TypeAttributes.Sealed);
        var method = type.DefineMethod("Spin" + Evil, MethodAttributes.Public | MethodAttributes.Static, typeof(long), new[] { typeof(long) });
        // long Spin(long n) { long i = 0, acc = 0; while (i < n) { acc = acc * 31 + i; i++; } return acc; }
        var il = method.GetILGenerator();
        var i = il.DeclareLocal(typeof(long));
        var acc = il.DeclareLocal(typeof(long));
        var test = il.DefineLabel();
        var body = il.DefineLabel();
        il.Emit(OpCodes.Br, test);
        il.MarkLabel(body);
        il.Emit(OpCodes.Ldloc, acc);
        il.Emit(OpCodes.Ldc_I8, 31L);
        il.Emit(OpCodes.Mul);
        il.Emit(OpCodes.Ldloc, i);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Stloc, acc);
        il.Emit(OpCodes.Ldloc, i);
        il.Emit(OpCodes.Ldc_I8, 1L);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Stloc, i);
        il.MarkLabel(test);
        il.Emit(OpCodes.Ldloc, i);
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Blt, body);
        il.Emit(OpCodes.Ldloc, acc);
        il.Emit(OpCodes.Ret);
        var spin = (Func<long, long>)type.CreateType().GetMethod("Spin" + Evil).CreateDelegate(typeof(Func<long, long>));
        long result = 0;
        var watch = System.Diagnostics.Stopwatch.StartNew();
        while (watch.ElapsedMilliseconds < 600)
            result += spin(5000000);
        Console.WriteLine(result != 1 ? "done" : "?");
        return 0;
    }
}
