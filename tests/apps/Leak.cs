// A service that leaks (issue 40's heap snapshots): every session it opens stays in a static
// cache, each holding a 1,000-byte buffer; a linked list of orders lives on Main's stack.
// Usage: Leak.exe SESSIONS [STOPFILE]. Prints "ready" once its heap is built, then (with
// STOPFILE) waits until that file exists. Exits 0 when its cache still holds every session.
using System;
using System.Collections.Generic;
using System.Threading;

namespace Acme
{
    class Session
    {
        public string Name;
        public byte[] Buffer;
        public Session(string name, int size) { Name = name; Buffer = new byte[size]; }
    }

    static class Cache
    {
        public static Dictionary<string, Session> Items = new Dictionary<string, Session>();
    }

    class Order
    {
        public int Id;
        public Order Next;
    }

    static class Program
    {
        static int Main(string[] args)
        {
            int sessions = args.Length > 0 ? int.Parse(args[0]) : 1000;
            string stop = args.Length > 1 ? args[1] : null;
            for (int i = 0; i < sessions; i++)
                Cache.Items["session-" + i] = new Session("session-" + i, 1000);
            Order head = null;
            for (int i = 0; i < 500; i++)
                head = new Order { Id = i, Next = head };
            // Garbage: gone at the snapshot's collection.
            for (int i = 0; i < 10000; i++)
                GC.KeepAlive(new byte[100]);
            Console.WriteLine("ready");
            Console.Out.Flush();
            while (stop != null && !System.IO.File.Exists(stop))
                Thread.Sleep(20);
            GC.KeepAlive(head);
            return Cache.Items.Count == sessions ? 0 : 1;
        }
    }
}
