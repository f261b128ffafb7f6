// Harm.cs: programs that a profiler must not change or kill (issue: "The profiler must never
// harm the program"). Each mode is one scenario; each prints what it measured and exits 0 when
// the program saw nothing wrong. The same .exe runs on CoreCLR and on Mono.
//
//   Harm.exe nullref THREADS MILLISECONDS   catch NullReferenceException from a null field read
//                                           in a loop on THREADS threads
//   Harm.exe fpe THREADS MILLISECONDS       the same with integer division by zero
//   Harm.exe sleeps COUNT MILLISECONDS      COUNT usleep()s and COUNT poll()s of MILLISECONDS
//                                           each; prints how long they took and how many
//                                           returned early (EINTR)
//   Harm.exe sigprof default|ignore|handler|queue|taken
//                                           the program resets SIGPROF (SIG_DFL, SIG_IGN, its
//                                           own handler) or sends itself one (sigqueue), or
//                                           (taken) installs its own (native) handler on every real-time
//                                           signal above SIGRTMIN+3, then works for a second on
//                                           the main thread
//   Harm.exe freedstack                     (CoreCLR, x86-64) managed code on a thread whose
//                                           stack the program allocated itself, with the memory
//                                           just above that stack unmapped, while native code
//                                           runs with a frame pointer that points into the
//                                           unmapped memory
//   Harm.exe throws DEPTH SECONDS PERIOD_MS a call tree of about 2·10^DEPTH distinct paths, then
//                                           for SECONDS one caught exception every PERIOD_MS
//                                           (none with PERIOD_MS 0) on the main thread while
//                                           another thread allocates; prints the longest stall
//                                           it saw between two allocations (stall_ms=…) and
//                                           how many stalls lasted 100 ms or more
//                                           (long_stalls=…)
//   Harm.exe fork CHILDREN                  (Mono) forks CHILDREN children that each exit()
//                                           at once
//   Harm.exe bogusframes MILLISECONDS       (CoreCLR, x86-64) loads a ReadyToRun framework
//                                           assembly it never runs, then burns CPU for
//                                           MILLISECONDS in a callback of native code whose
//                                           frame pointer leads through two fake frames: their
//                                           "return addresses" lie in that image, one in its
//                                           metadata, one in the code of a method never
//                                           prepared (what the frame-pointer walk reads where
//                                           native code keeps something else in RBP)

using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Acme
{
    class Holder
    {
        public int Value = 1;
    }

    static class Harm
    {
        [DllImport("libc.so.6", SetLastError = true)]
        static extern int usleep(uint usec);

        [StructLayout(LayoutKind.Sequential)]
        struct PollFd
        {
            public int fd;
            public short events;
            public short revents;
        }

        [DllImport("libc.so.6", SetLastError = true)]
        static extern int poll(PollFd[] fds, ulong nfds, int timeout);

        [DllImport("libc.so.6", SetLastError = true)]
        static extern IntPtr signal(int signum, IntPtr handler);

        [DllImport("libc.so.6", SetLastError = true)]
        static extern int sigqueue(int pid, int sig, IntPtr value);

        [DllImport("libc.so.6")]
        static extern int getpid();

        [StructLayout(LayoutKind.Sequential)]
        struct Timespec
        {
            public long sec;
            public long nsec;
        }

        [DllImport("libc.so.6")]
        static extern int clock_gettime(int clock, out Timespec ts);

        const int CLOCK_THREAD_CPUTIME_ID = 3;

        /// This thread's CPU time, in milliseconds.
        static double ThreadCpuMs()
        {
            Timespec ts;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, out ts);
            return ts.sec * 1000.0 + ts.nsec / 1e6;
        }

        [DllImport("libc.so.6")]
        static extern int fork();

        [DllImport("libc.so.6")]
        static extern void _exit(int code);

        [DllImport("libc.so.6")]
        static extern void exit(int code);

        [DllImport("libc.so.6")]
        static extern int waitpid(int pid, out int status, int options);

        [DllImport("libc.so.6")]
        static extern int __libc_current_sigrtmin();

        [DllImport("libc.so.6")]
        static extern int __libc_current_sigrtmax();

        [DllImport("libc.so.6", SetLastError = true)]
        static extern IntPtr mmap(IntPtr addr, UIntPtr length, int prot, int flags, int fd, IntPtr offset);

        [DllImport("libc.so.6", SetLastError = true)]
        static extern int munmap(IntPtr addr, UIntPtr length);

        [DllImport("libc.so.6", SetLastError = true)]
        static extern int mprotect(IntPtr addr, UIntPtr length, int prot);

        [DllImport("libc.so.6")]
        static extern int pthread_attr_init(IntPtr attr);

        [DllImport("libc.so.6")]
        static extern int pthread_attr_setstack(IntPtr attr, IntPtr stack, UIntPtr size);

        [DllImport("libc.so.6")]
        static extern int pthread_create(out IntPtr thread, IntPtr attr, IntPtr start, IntPtr arg);

        [DllImport("libc.so.6")]
        static extern int pthread_join(IntPtr thread, out IntPtr result);

        const int SIGPROF = 27;
        const int EINTR = 4;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Deref(Holder h)
        {
            return h.Value;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Divide(int a, int b)
        {
            return a / b;
        }

        static long Faults(bool nullref, int ms)
        {
            long caught = 0, x = 0;
            var watch = Stopwatch.StartNew();
            while (watch.ElapsedMilliseconds < ms)
            {
                try
                {
                    x += nullref ? Deref(null) : Divide(7, (int)(x & 0));
                }
                catch (NullReferenceException)
                {
                    caught++;
                }
                catch (DivideByZeroException)
                {
                    caught++;
                }
                // Some work between faults, so the samples land everywhere.
                for (int i = 0; i < 2000; i++) x = x * 31 + i;
            }
            return caught;
        }

        static int FaultLoop(bool nullref, int threads, int ms)
        {
            var workers = new Thread[threads];
            var counts = new long[threads];
            for (int t = 0; t < threads; t++)
            {
                int id = t;
                workers[t] = new Thread(() => { counts[id] = Faults(nullref, ms); });
                workers[t].Name = "fault-" + t;
                workers[t].Start();
            }
            long total = 0;
            for (int t = 0; t < threads; t++)
            {
                workers[t].Join();
                total += counts[t];
            }
            Console.WriteLine("caught {0} on {1} threads", total > 0 ? "some" : "none", threads);
            return total > 0 ? 0 : 1;
        }

        static int Sleeps(int count, int ms)
        {
            int early = 0;
            var watch = Stopwatch.StartNew();
            for (int i = 0; i < count; i++)
            {
                if (usleep((uint)ms * 1000) != 0 && Marshal.GetLastWin32Error() == EINTR) early++;
            }
            double usleepMs = watch.Elapsed.TotalMilliseconds;
            int pollEarly = 0;
            watch.Restart();
            var none = new PollFd[0];
            for (int i = 0; i < count; i++)
            {
                if (poll(none, 0, ms) != 0 && Marshal.GetLastWin32Error() == EINTR) pollEarly++;
            }
            double pollMs = watch.Elapsed.TotalMilliseconds;
            Console.WriteLine("usleep total_ms={0:F1} eintr={1}", usleepMs, early);
            Console.WriteLine("poll total_ms={0:F1} eintr={1}", pollMs, pollEarly);
            return 0;
        }

        delegate void SignalHandler(int sig);
        static int handled;
        static SignalHandler keep;

        static void OnSigprof(int sig)
        {
            Interlocked.Increment(ref handled);
        }

        // Works until this thread has run for `ms` of CPU time: the same amount of work, and of
        // CPU-clock samples, however busy the machine is.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Spin(int ms)
        {
            long x = 0;
            double start = ThreadCpuMs();
            while (ThreadCpuMs() - start < ms)
                for (int i = 0; i < 10000; i++) x = x * 31 + i;
            return x;
        }

        static int Sigprof(string how)
        {
            Spin(200);
            switch (how)
            {
                case "default":
                    signal(SIGPROF, IntPtr.Zero);
                    break;
                case "ignore":
                    signal(SIGPROF, new IntPtr(1));
                    break;
                case "handler":
                    keep = OnSigprof;
                    signal(SIGPROF, Marshal.GetFunctionPointerForDelegate(keep));
                    break;
                case "taken":
                {
                    // A native handler, as a real program's would be: one that may run at any
                    // instruction. (A managed delegate as a signal handler makes the runtime abort
                    // when a signal finds the thread in managed code: a signal already on its way
                    // when the handler changes would do that, whoever sent it.)
                    IntPtr handler = CountingHandler();
                    for (int sig = __libc_current_sigrtmin() + 4; sig <= __libc_current_sigrtmax(); sig++)
                        signal(sig, handler);
                    break;
                }
                case "queue":
                    keep = OnSigprof;
                    signal(SIGPROF, Marshal.GetFunctionPointerForDelegate(keep));
                    for (int i = 0; i < 3; i++)
                    {
                        sigqueue(getpid(), SIGPROF, new IntPtr(7));
                        Thread.Sleep(10);
                    }
                    break;
            }
            Spin(1000);
            if (how == "taken")
                handled += (int)Marshal.ReadInt64(nativeHandled);
            if (how == "handler" || how == "queue" || how == "taken")
                Console.WriteLine("own handler ran: {0}", handled > 0 ? "yes" : "no");
            Console.WriteLine("sigprof {0}: survived", how);
            return 0;
        }

        // sigprof taken: x86-64 code for a signal handler that counts its calls in `nativeHandled`.
        static IntPtr nativeHandled;

        static IntPtr CountingHandler()
        {
            const int PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20;
            nativeHandled = Marshal.AllocHGlobal(8);
            Marshal.WriteInt64(nativeHandled, 0);
            var code = new byte[15];
            code[0] = 0x48; code[1] = 0xB8;                       // mov rax, imm64
            BitConverter.GetBytes(nativeHandled.ToInt64()).CopyTo(code, 2);
            code[10] = 0xF0; code[11] = 0x48; code[12] = 0xFF; code[13] = 0x00; // lock inc qword [rax]
            code[14] = 0xC3;                                      // ret
            IntPtr page = mmap(IntPtr.Zero, new UIntPtr(4096), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, IntPtr.Zero);
            Marshal.Copy(code, 0, page, code.Length);
            mprotect(page, new UIntPtr(4096), PROT_READ | PROT_EXEC);
            return page;
        }

        // freedstack: x86-64 code that sets the frame pointer to its first argument and counts its
        // second down to zero: native code whose frame chain leads wherever the caller says.
        static readonly byte[] SpinWithFramePointer =
        {
            0x55,                   // push rbp
            0x48, 0x89, 0xfd,       // mov rbp, rdi
            0x48, 0xff, 0xce,       // loop: dec rsi
            0x75, 0xfb,             // jnz loop
            0x5d,                   // pop rbp
            0xc3,                   // ret
        };

        delegate void NativeSpin(IntPtr framePointer, long iterations);
        delegate IntPtr ThreadStart(IntPtr arg);
        static ThreadStart keepStart;
        static IntPtr above;
        static readonly UIntPtr StackSize = new UIntPtr(1 << 20);
        static NativeSpin nativeSpin;
        static string freedStackResult = "not run";

        static IntPtr OnCustomStack(IntPtr arg)
        {
            Spin(300);
            // The memory just above this thread's stack goes away...
            if (munmap(above, StackSize) != 0)
            {
                freedStackResult = "munmap failed";
                return IntPtr.Zero;
            }
            // ...while native code runs with a frame pointer into it.
            var watch = Stopwatch.StartNew();
            IntPtr bogus = above + (1 << 19);
            while (watch.ElapsedMilliseconds < 300)
                nativeSpin(bogus, 1000000);
            Spin(100);
            freedStackResult = "survived";
            return IntPtr.Zero;
        }

        static int FreedStack()
        {
            const int PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20;
            IntPtr code = mmap(IntPtr.Zero, new UIntPtr(4096), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, IntPtr.Zero);
            Marshal.Copy(SpinWithFramePointer, 0, code, SpinWithFramePointer.Length);
            mprotect(code, new UIntPtr(4096), PROT_READ | PROT_EXEC);
            nativeSpin = (NativeSpin)Marshal.GetDelegateForFunctionPointer(code, typeof(NativeSpin));
            // One mapping: the thread's stack, and the memory above it (unmapped later).
            IntPtr stack = mmap(IntPtr.Zero, new UIntPtr(2UL << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, IntPtr.Zero);
            above = stack + (1 << 20);
            IntPtr attr = Marshal.AllocHGlobal(256);
            pthread_attr_init(attr);
            pthread_attr_setstack(attr, stack, StackSize);
            keepStart = OnCustomStack;
            IntPtr thread;
            if (pthread_create(out thread, attr, Marshal.GetFunctionPointerForDelegate(keepStart), IntPtr.Zero) != 0)
            {
                Console.WriteLine("freedstack: pthread_create failed");
                return 1;
            }
            IntPtr result;
            pthread_join(thread, out result);
            Console.WriteLine("freedstack: {0}", freedStackResult);
            return freedStackResult == "survived" ? 0 : 1;
        }

        // throws: Fan and A0..A9 call each other DEPTH levels deep, every path a distinct node.
        [MethodImpl(MethodImplOptions.NoInlining)] static void A0(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A1(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A2(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A3(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A4(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A5(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A6(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A7(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A8(int d) { if (d > 0) Fan(d - 1); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void A9(int d) { if (d > 0) Fan(d - 1); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Fan(int d)
        {
            A0(d); A1(d); A2(d); A3(d); A4(d); A5(d); A6(d); A7(d); A8(d); A9(d);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Fail(int i)
        {
            throw new InvalidOperationException("expected " + i);
        }

        static volatile bool stop;
        static object[] keepAlive = new object[1024];

        static int Throws(int depth, int seconds, int periodMs)
        {
            Fan(depth);
            double longest = 0;
            int longStalls = 0;
            var allocator = new Thread(() =>
            {
                var watch = Stopwatch.StartNew();
                double last = 0;
                int n = 0;
                while (!stop)
                {
                    keepAlive[n++ & 1023] = new byte[256];
                    double now = watch.Elapsed.TotalMilliseconds;
                    if (now - last > longest) longest = now - last;
                    if (now - last >= 100) longStalls++;
                    last = now;
                }
            });
            allocator.Name = "allocator";
            allocator.Start();
            var clock = Stopwatch.StartNew();
            int caught = 0;
            while (clock.ElapsedMilliseconds < seconds * 1000L)
            {
                Thread.Sleep(periodMs > 0 ? periodMs : 50);
                if (periodMs == 0) continue;
                try { Fail(caught); } catch (InvalidOperationException) { caught++; }
            }
            stop = true;
            allocator.Join();
            Console.WriteLine("throws: caught={0} stall_ms={1:F1} long_stalls={2}", caught, longest, longStalls);
            return 0;
        }

        static int Fork(int children)
        {
            Spin(100);
            int ok = 0;
            for (int i = 0; i < children; i++)
            {
                int pid = fork();
                if (pid == 0)
                {
                    exit(0); // runs atexit handlers, as a forked child calling exit() does
                }
                int status;
                if (waitpid(pid, out status, 0) == pid && status == 0) ok++;
            }
            Spin(100);
            Console.WriteLine("children exited cleanly: {0} of {1}", ok, children);
            return ok == children ? 0 : 1;
        }

        // Spins for `ms` of CPU time, then ends the process with Environment.FailFast: the runtime
        // aborts (SIGABRT, exit status 134), whatever a sampler was doing.
        static int FailFast(int ms)
        {
            Spin(ms);
            Console.WriteLine("failing fast");
            Console.Out.Flush();
            Environment.FailFast("Harm.exe failfast");
            return 0;
        }

        static int depth;

        // Unbounded recursion on a thread with a small stack: the runtime reports the stack
        // overflow and aborts (exit status 134, "Stack overflow." on stderr). `spin` ms of CPU
        // first, so that samples are being taken when the stack runs out.
        static int Overflow(int spin)
        {
            Spin(spin);
            var t = new System.Threading.Thread(() => Recurse(0), 256 * 1024);
            t.Start();
            t.Join();
            return 0;
        }

        static long Recurse(long n)
        {
            depth++;
            return Recurse(n + 1) + n;
        }

        // Background threads parked `depth` frames deep when Main returns. Mono's main thread then
        // aborts each of them, walking its whole stack (for a finally block to protect) in what
        // Mono calls an async context, where a sampling signal aborts the process (an assertion in
        // Mono's signal handler). Many deep stacks make that walk long enough for a sample at
        // 2 kHz to land in it in every run.
        static int AbortAtExit(int threads, int depth)
        {
            var parked = new System.Threading.CountdownEvent(threads);
            for (int i = 0; i < threads; i++)
            {
                var t = new System.Threading.Thread(() => Park(depth, parked));
                t.IsBackground = true;
                t.Start();
            }
            parked.Wait();
            Spin(100);
            Console.WriteLine("parked " + threads + " threads " + depth + " deep");
            return 0;
        }

        static int Park(int depth, System.Threading.CountdownEvent parked)
        {
            if (depth > 0)
                return Park(depth - 1, parked) + 1;
            parked.Signal();
            System.Threading.Thread.Sleep(System.Threading.Timeout.Infinite);
            return 0;
        }

        // bogusframes: the native function below, called with (callback, fake1, fake2). It builds
        // two fake frames on its own stack, F1 = {F2, fake1} and F2 = {its real frame, fake2},
        // points RBP at F1 and calls the callback; a frame-pointer walk from the callback reads
        // fake1 and fake2 as return addresses, then goes on through the real frames.
        static readonly byte[] CallThroughFakeFrames = {
            0x55,                   // push rbp
            0x48, 0x89, 0xE5,       // mov rbp, rsp        (the real frame, R)
            0x52,                   // push rdx            F2 + 8 = fake2
            0x55,                   // push rbp            F2 = R
            0x48, 0x89, 0xE0,       // mov rax, rsp
            0x56,                   // push rsi            F1 + 8 = fake1
            0x50,                   // push rax            F1 = F2
            0x48, 0x89, 0xE5,       // mov rbp, rsp        (rsp is 16-byte aligned here)
            0xFF, 0xD7,             // call rdi
            0x48, 0x89, 0xEC,       // mov rsp, rbp
            0x48, 0x83, 0xC4, 0x20, // add rsp, 32
            0x5D,                   // pop rbp
            0xC3,                   // ret
        };

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate void Burn();

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate void ThroughFakeFrames(IntPtr callback, IntPtr fake1, IntPtr fake2);

        static int burnMs;
        public static long Burnt;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void BurnCpu()
        {
            var watch = Stopwatch.StartNew();
            long x = 1;
            while (watch.ElapsedMilliseconds < burnMs)
                for (int i = 0; i < 10000; i++) x = x * 31 + i;
            Burnt = x;
        }

        static int BogusFrames(int ms)
        {
            // Loaded, mapped, never run: no method of it is prepared.
            string path = System.IO.Path.Combine(RuntimeEnvironment.GetRuntimeDirectory(), "System.Formats.Tar.dll");
            System.Reflection.Assembly.LoadFrom(path);
            long imageBase = 0, last = 0;
            foreach (string line in System.IO.File.ReadAllLines("/proc/self/maps"))
            {
                if (!line.EndsWith("/System.Formats.Tar.dll")) continue;
                string[] fields = line.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries);
                long start = Convert.ToInt64(fields[0].Split('-')[0], 16);
                // The image (private, sections at their RVAs), not the whole file mapped shared.
                if (fields[1] == "r--p" && fields[2] == "00000000" && imageBase == 0) imageBase = start;
                last = Math.Max(last, start);
            }
            if (imageBase == 0)
            {
                Console.WriteLine("bogusframes: System.Formats.Tar.dll is not mapped");
                return 1;
            }
            // The image as mapped: PE headers, the CLI header, its ReadyToRun header, section 102
            // (the runtime functions) and the first one's begin.
            IntPtr b = new IntPtr(imageBase);
            int pe = Marshal.ReadInt32(b, 0x3c);
            int cli = Marshal.ReadInt32(b, pe + 24 + 112 + 14 * 8);
            int r2r = Marshal.ReadInt32(b, cli + 64);
            int sections = Marshal.ReadInt32(b, r2r + 12);
            int functions = 0;
            for (int i = 0; i < sections; i++)
                if (Marshal.ReadInt32(b, r2r + 16 + i * 12) == 102) functions = Marshal.ReadInt32(b, r2r + 16 + i * 12 + 4);
            if (r2r == 0 || functions == 0)
            {
                Console.WriteLine("bogusframes: System.Formats.Tar.dll has no ReadyToRun code");
                return 1;
            }
            IntPtr inCode = new IntPtr(imageBase + Marshal.ReadInt32(b, functions) + 1);
            IntPtr inData = new IntPtr(last + 0x11);

            const int PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20;
            IntPtr code = mmap(IntPtr.Zero, new UIntPtr(4096), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, IntPtr.Zero);
            Marshal.Copy(CallThroughFakeFrames, 0, code, CallThroughFakeFrames.Length);
            mprotect(code, new UIntPtr(4096), PROT_READ | PROT_EXEC);
            var call = (ThroughFakeFrames)Marshal.GetDelegateForFunctionPointer(code, typeof(ThroughFakeFrames));
            Burn burn = BurnCpu;
            burnMs = ms;
            call(Marshal.GetFunctionPointerForDelegate(burn), inData, inCode);
            GC.KeepAlive(burn);
            Console.WriteLine("bogusframes: survived");
            return 0;
        }

        static int Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "";
            switch (mode)
            {
                case "nullref":
                    return FaultLoop(true, int.Parse(args[1]), int.Parse(args[2]));
                case "fpe":
                    return FaultLoop(false, int.Parse(args[1]), int.Parse(args[2]));
                case "sleeps":
                    return Sleeps(int.Parse(args[1]), int.Parse(args[2]));
                case "sigprof":
                    return Sigprof(args[1]);
                case "freedstack":
                    return FreedStack();
                case "throws":
                    return Throws(int.Parse(args[1]), int.Parse(args[2]), int.Parse(args[3]));
                case "fork":
                    return Fork(int.Parse(args[1]));
                case "failfast":
                    return FailFast(int.Parse(args[1]));
                case "overflow":
                    return Overflow(int.Parse(args[1]));
                case "abortatexit":
                    return AbortAtExit(int.Parse(args[1]), int.Parse(args[2]));
                case "bogusframes":
                    return BogusFrames(int.Parse(args[1]));
                default:
                    Console.Error.WriteLine("usage: Harm.exe nullref|fpe|sleeps|sigprof|freedstack|throws|fork|failfast|overflow|abortatexit|bogusframes ...");
                    return 2;
            }
        }
    }
}
