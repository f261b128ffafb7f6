// Csc.cs: a tiny C# compiler driver around Roslyn (Microsoft.CodeAnalysis 4.8, taken from the npm
// package @typespec/http-client-csharp by scripts/setup-runtime.sh), so that the tests get
// programs with real portable PDBs, which Debian's mcs cannot produce (it writes .mdb files).
//
//   dotnet Csc.exe [-embed] -out:PATH.exe SOURCE.cs
//
// Compiles one source file into a console program for .NET 8 (optimized, deterministic) against
// the implementation assemblies of the runtime it runs on, with a portable PDB beside it
// (PATH.pdb) or, with -embed, embedded in the PE. The PDB names the source by its full path.
// Diagnostics go to stderr; the exit code is 1 on errors (nothing is written then), 2 on bad
// usage.
//
// Why reflection: mcs (built like every test app, against Mono's mscorlib) cannot reference the
// Roslyn DLLs directly: the package holds Roslyn's net7.0 build, which references System.Runtime
// 7.0, and mcs then fails with CS0012 (System.Object "is defined in an assembly that is not
// referenced"). With -nostdlib against the .NET 8 runtime's System.Private.CoreLib it gets further
// but dies of an internal error loading System.ReadOnlySpan<T> as soon as a call has a span
// overload (Console.Error.WriteLine does). So Roslyn is loaded with Assembly.LoadFrom from
// beside Csc.exe and called through reflection, with a small helper standing in for C#'s named
// and optional arguments. System.Collections.Immutable and System.Reflection.Metadata, which
// Roslyn needs, come with the .NET 8 runtime.

using System;
using System.Collections;
using System.IO;
using System.Reflection;
using System.Text;

static class Csc
{
    static Assembly codeAnalysis, csharp;

    static Type CA(string name) { return codeAnalysis.GetType("Microsoft.CodeAnalysis." + name, true); }
    static Type CS(string name) { return csharp.GetType("Microsoft.CodeAnalysis.CSharp." + name, true); }
    static object Enum(Type type, string value) { return System.Enum.Parse(type, value); }

    // Calls the public, non-obsolete overload of method `name` (a constructor when null) of `type`
    // that takes every named argument (`named` alternates names and values) and has defaults for
    // all its other parameters, preferring the one with the most parameters: what C# does for
    // Roslyn's APIs, whose newest overload has the longest list of optional parameters.
    static object Call(Type type, string name, object target, params object[] named)
    {
        Func<string, int> at = n => { for (int i = 0; i < named.Length; i += 2) if ((string)named[i] == n) return i; return -1; };
        MethodBase best = null;
        MethodBase[] candidates = name == null ? (MethodBase[])type.GetConstructors() : type.GetMethods();
        foreach (MethodBase m in candidates)
        {
            if ((name != null && m.Name != name) || m.IsDefined(typeof(ObsoleteAttribute), false)) continue;
            ParameterInfo[] ps = m.GetParameters();
            bool fits = true;
            for (int i = 0; i < named.Length && fits; i += 2)
            {
                ParameterInfo p = Array.Find(ps, q => q.Name == (string)named[i]);
                fits = p != null && (named[i + 1] == null ? !p.ParameterType.IsValueType : p.ParameterType.IsInstanceOfType(named[i + 1]));
            }
            foreach (ParameterInfo p in ps)
                fits = fits && (p.IsOptional || at(p.Name) >= 0);
            if (fits && (best == null || ps.Length > best.GetParameters().Length)) best = m;
        }
        if (best == null) throw new MissingMethodException(type.FullName, name ?? ".ctor");
        ParameterInfo[] parameters = best.GetParameters();
        object[] args = new object[parameters.Length];
        for (int i = 0; i < parameters.Length; i++)
        {
            int given = at(parameters[i].Name);
            args[i] = given >= 0 ? named[given + 1] : Type.Missing; // Missing: the parameter's default
        }
        try
        {
            return best is ConstructorInfo ? ((ConstructorInfo)best).Invoke(args) : best.Invoke(target, args);
        }
        catch (TargetInvocationException e)
        {
            throw e.InnerException;
        }
    }

    static object Get(object target, string property) { return target.GetType().GetProperty(property).GetValue(target, null); }

    static int Usage(string why)
    {
        Console.Error.WriteLine("csc: " + why);
        Console.Error.WriteLine("usage: Csc.exe [-embed] -out:PATH.exe SOURCE.cs");
        return 2;
    }

    static int Main(string[] argv)
    {
        bool embed = false;
        string output = null, source = null;
        foreach (string arg in argv)
        {
            if (arg == "-embed") embed = true;
            else if (arg.StartsWith("-out:", StringComparison.Ordinal)) output = arg.Substring(5);
            else if (arg.StartsWith("-", StringComparison.Ordinal)) return Usage("unknown option " + arg);
            else if (source == null) source = arg;
            else return Usage("only one source file is supported");
        }
        if (source == null || string.IsNullOrEmpty(output)) return Usage("need -out:PATH.exe and SOURCE.cs");
        source = Path.GetFullPath(source);
        output = Path.GetFullPath(output);
        string pdb = Path.ChangeExtension(output, ".pdb");
        string text;
        try { text = File.ReadAllText(source, Encoding.UTF8); }
        catch (Exception e) { Console.Error.WriteLine("csc: cannot read " + source + ": " + e.Message); return 1; }

        string here = Path.GetDirectoryName(typeof(Csc).Assembly.Location);
        codeAnalysis = Assembly.LoadFrom(Path.Combine(here, "Microsoft.CodeAnalysis.dll"));
        csharp = Assembly.LoadFrom(Path.Combine(here, "Microsoft.CodeAnalysis.CSharp.dll"));

        // The encoding makes the text emittable with a checksum; the path is what the PDB records.
        object tree = Call(CS("CSharpSyntaxTree"), "ParseText", null,
            "text", text, "path", source, "encoding", new UTF8Encoding(false));
        Array trees = Array.CreateInstance(CA("SyntaxTree"), 1);
        trees.SetValue(tree, 0);

        // The implementation assemblies of the runtime this driver runs on (.NET 8).
        string[] dlls = Directory.GetFiles(Path.GetDirectoryName(typeof(object).Assembly.Location), "*.dll");
        Array.Sort(dlls, StringComparer.Ordinal);
        Array references = Array.CreateInstance(CA("MetadataReference"), dlls.Length);
        for (int i = 0; i < dlls.Length; i++)
            references.SetValue(Call(CA("MetadataReference"), "CreateFromFile", null, "path", dlls[i]), i);

        object options = Call(CS("CSharpCompilationOptions"), null, null,
            "outputKind", Enum(CA("OutputKind"), "ConsoleApplication"),
            "optimizationLevel", Enum(CA("OptimizationLevel"), "Release"),
            "deterministic", true);
        object compilation = Call(CS("CSharpCompilation"), "Create", null,
            "assemblyName", Path.GetFileNameWithoutExtension(output),
            "syntaxTrees", trees, "references", references, "options", options);

        Type emitOptionsType = codeAnalysis.GetType("Microsoft.CodeAnalysis.Emit.EmitOptions", true);
        Type formatType = codeAnalysis.GetType("Microsoft.CodeAnalysis.Emit.DebugInformationFormat", true);
        object emitOptions = Call(emitOptionsType, null, null,
            "debugInformationFormat", Enum(formatType, embed ? "Embedded" : "PortablePdb"),
            "pdbFilePath", pdb);
        MemoryStream peStream = new MemoryStream();
        MemoryStream pdbStream = embed ? null : new MemoryStream();
        object result = Call(compilation.GetType(), "Emit", compilation,
            "peStream", peStream, "pdbStream", pdbStream, "options", emitOptions);

        foreach (object d in (IEnumerable)Get(result, "Diagnostics"))
        {
            string severity = Get(d, "Severity").ToString();
            if (severity == "Error" || severity == "Warning") Console.Error.WriteLine(d.ToString());
        }
        if (!(bool)Get(result, "Success")) return 1;
        File.WriteAllBytes(output, peStream.ToArray());
        if (pdbStream != null) File.WriteAllBytes(pdb, pdbStream.ToArray());
        else File.Delete(pdb); // a stale one from an earlier compilation would not match
        return 0;
    }
}
