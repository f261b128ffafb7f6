// Demo.cs: the README demo workload for Sonde (about 0.3-0.5 s on .NET 8 without a profiler).
// Acme.Demo.Program.Main generates text, tokenizes it, counts word frequencies, sorts,
// runs a prime sieve and evaluates arithmetic expressions with a recursive-descent parser.
// Everything is deterministic (fixed seed), so every run does the same work and prints the same lines.

using System;
using System.Collections.Generic;
using System.Text;

namespace Acme.Demo
{
    // Small deterministic xorshift generator.
    sealed class Rng
    {
        uint state;

        public Rng(uint seed) { state = seed == 0 ? 1u : seed; }

        public int Next(int max)
        {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            return (int)(state % (uint)max);
        }
    }

    // Produces pseudo-English text from a fixed list of syllables.
    static class TextGenerator
    {
        static readonly string[] Syllables =
        {
            "ka", "lo", "mi", "ra", "ten", "su", "vo", "dri", "an", "el",
            "or", "pla", "qua", "zen", "ti", "mo", "ber", "cu", "xi", "na",
        };

        public static string Generate(Rng rng, int words)
        {
            StringBuilder sb = new StringBuilder(words * 7);
            for (int i = 0; i < words; i++)
            {
                if (i > 0)
                    sb.Append(rng.Next(12) == 0 ? ". " : " ");
                AppendWord(sb, rng);
            }
            sb.Append('.');
            return sb.ToString();
        }

        static void AppendWord(StringBuilder sb, Rng rng)
        {
            // Skewed towards short words, so that some words are much more frequent than others.
            int syllables = 1 + rng.Next(3) * rng.Next(2);
            for (int s = 0; s < syllables; s++)
            {
                string syl = Syllables[rng.Next(rng.Next(Syllables.Length) + 1)];
                sb.Append(s == 0 && rng.Next(10) == 0 ? Capitalize(syl) : syl);
            }
        }

        static string Capitalize(string s)
        {
            return char.ToUpperInvariant(s[0]) + s.Substring(1);
        }
    }

    // Splits text into lower-case word tokens.
    sealed class Tokenizer
    {
        readonly StringBuilder current = new StringBuilder();

        public List<string> Tokenize(string text)
        {
            List<string> tokens = new List<string>();
            for (int i = 0; i < text.Length; i++)
            {
                char c = text[i];
                if (IsWordChar(c))
                {
                    current.Append(char.ToLowerInvariant(c));
                }
                else if (current.Length > 0)
                {
                    tokens.Add(current.ToString());
                    current.Clear();
                }
            }
            if (current.Length > 0)
            {
                tokens.Add(current.ToString());
                current.Clear();
            }
            return tokens;
        }

        static bool IsWordChar(char c)
        {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        }
    }

    // Word-frequency table.
    sealed class WordCounter
    {
        readonly Dictionary<string, int> counts = new Dictionary<string, int>();

        public int Distinct { get { return counts.Count; } }

        public void AddAll(List<string> tokens)
        {
            foreach (string token in tokens)
                Add(token);
        }

        void Add(string word)
        {
            int n;
            counts.TryGetValue(word, out n);
            counts[word] = n + 1;
        }

        public KeyValuePair<string, int>[] Top(int k)
        {
            KeyValuePair<string, int>[] all = new KeyValuePair<string, int>[counts.Count];
            int i = 0;
            foreach (KeyValuePair<string, int> entry in counts)
                all[i++] = entry;
            Sorter.MergeSort(all, ByCountThenWord);
            KeyValuePair<string, int>[] top = new KeyValuePair<string, int>[Math.Min(k, all.Length)];
            Array.Copy(all, top, top.Length);
            return top;
        }

        static int ByCountThenWord(KeyValuePair<string, int> a, KeyValuePair<string, int> b)
        {
            if (a.Value != b.Value)
                return b.Value.CompareTo(a.Value);
            return string.CompareOrdinal(a.Key, b.Key);
        }
    }

    // A plain top-down merge sort.
    static class Sorter
    {
        public static void MergeSort<T>(T[] items, Comparison<T> compare)
        {
            T[] scratch = new T[items.Length];
            SortRange(items, scratch, 0, items.Length, compare);
        }

        static void SortRange<T>(T[] items, T[] scratch, int lo, int hi, Comparison<T> compare)
        {
            if (hi - lo < 2)
                return;
            int mid = (lo + hi) / 2;
            SortRange(items, scratch, lo, mid, compare);
            SortRange(items, scratch, mid, hi, compare);
            Merge(items, scratch, lo, mid, hi, compare);
        }

        static void Merge<T>(T[] items, T[] scratch, int lo, int mid, int hi, Comparison<T> compare)
        {
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                scratch[k++] = compare(items[j], items[i]) < 0 ? items[j++] : items[i++];
            while (i < mid)
                scratch[k++] = items[i++];
            while (j < hi)
                scratch[k++] = items[j++];
            Array.Copy(scratch, lo, items, lo, hi - lo);
        }

        public static int CompareInts(int a, int b)
        {
            return a.CompareTo(b);
        }
    }

    // Sieve of Eratosthenes.
    static class PrimeSieve
    {
        public static bool[] Composites(int limit)
        {
            bool[] composite = new bool[limit + 1];
            composite[0] = true;
            if (limit >= 1)
                composite[1] = true;
            for (long p = 2; p * p <= limit; p++)
            {
                if (composite[p])
                    continue;
                for (long m = p * p; m <= limit; m += p)
                    composite[m] = true;
            }
            return composite;
        }

        public static int CountPrimes(int limit)
        {
            bool[] composite = Composites(limit);
            int count = 0;
            for (int i = 0; i <= limit; i++)
                if (!composite[i])
                    count++;
            return count;
        }
    }

    // Builds random arithmetic expressions such as "(3 + 4) * 2 - 7 / (1 + 1)".
    static class ExpressionGenerator
    {
        public static string Generate(Rng rng, int depth)
        {
            StringBuilder sb = new StringBuilder();
            AppendExpression(sb, rng, depth);
            return sb.ToString();
        }

        static void AppendExpression(StringBuilder sb, Rng rng, int depth)
        {
            if (depth == 0 || rng.Next(4) == 0)
            {
                sb.Append(1 + rng.Next(9));
                return;
            }
            bool parens = rng.Next(3) == 0;
            if (parens)
                sb.Append('(');
            AppendExpression(sb, rng, depth - 1);
            sb.Append(' ').Append("+-*/"[rng.Next(4)]).Append(' ');
            AppendExpression(sb, rng, depth - 1);
            if (parens)
                sb.Append(')');
        }
    }

    // Recursive-descent evaluator:
    //   expression := term (('+' | '-') term)*
    //   term       := factor (('*' | '/') factor)*
    //   factor     := number | '(' expression ')' | '-' factor
    sealed class ExpressionParser
    {
        string text;
        int pos;

        public double Evaluate(string expression)
        {
            text = expression;
            pos = 0;
            double value = ParseExpression();
            SkipSpaces();
            if (pos != text.Length)
                throw new FormatException("unexpected '" + text[pos] + "' at " + pos);
            return value;
        }

        double ParseExpression()
        {
            double value = ParseTerm();
            while (true)
            {
                char op = Peek();
                if (op != '+' && op != '-')
                    return value;
                pos++;
                double rhs = ParseTerm();
                value = op == '+' ? value + rhs : value - rhs;
            }
        }

        double ParseTerm()
        {
            double value = ParseFactor();
            while (true)
            {
                char op = Peek();
                if (op != '*' && op != '/')
                    return value;
                pos++;
                double rhs = ParseFactor();
                value = op == '*' ? value * rhs : value / rhs;
            }
        }

        double ParseFactor()
        {
            char c = Peek();
            if (c == '(')
            {
                pos++;
                double value = ParseExpression();
                if (Peek() != ')')
                    throw new FormatException("expected ')' at " + pos);
                pos++;
                return value;
            }
            if (c == '-')
            {
                pos++;
                return -ParseFactor();
            }
            return ParseNumber();
        }

        double ParseNumber()
        {
            SkipSpaces();
            int start = pos;
            double value = 0;
            while (pos < text.Length && text[pos] >= '0' && text[pos] <= '9')
                value = value * 10 + (text[pos++] - '0');
            if (pos == start)
                throw new FormatException("expected a number at " + pos);
            return value;
        }

        char Peek()
        {
            SkipSpaces();
            return pos < text.Length ? text[pos] : '\0';
        }

        void SkipSpaces()
        {
            while (pos < text.Length && text[pos] == ' ')
                pos++;
        }
    }

    static class Program
    {
        const int Words = 100000;
        const int SieveLimit = 40000000;
        const int Expressions = 4000;
        const int ExpressionDepth = 6;
        const int Numbers = 50000;

        static void Main()
        {
            Rng rng = new Rng(20240601);

            string text = TextGenerator.Generate(rng, Words);
            List<string> tokens = new Tokenizer().Tokenize(text);
            WordCounter counter = new WordCounter();
            counter.AddAll(tokens);
            Console.WriteLine("text: " + text.Length + " chars, " + tokens.Count + " tokens, " + counter.Distinct + " distinct words");
            Console.WriteLine("top words: " + FormatTop(counter.Top(5)));

            int[] numbers = new int[Numbers];
            for (int i = 0; i < numbers.Length; i++)
                numbers[i] = rng.Next(1000000);
            Sorter.MergeSort(numbers, Sorter.CompareInts);
            Console.WriteLine("sorted " + numbers.Length + " numbers: min=" + numbers[0] + " median=" + numbers[numbers.Length / 2] + " max=" + numbers[numbers.Length - 1]);

            Console.WriteLine("primes up to " + SieveLimit + ": " + PrimeSieve.CountPrimes(SieveLimit));

            ExpressionParser parser = new ExpressionParser();
            Console.WriteLine("example: " + ExpressionGenerator.Generate(new Rng(7), 3) + " = " + parser.Evaluate(ExpressionGenerator.Generate(new Rng(7), 3)));
            double checksum = 0;
            int finite = 0;
            for (int i = 0; i < Expressions; i++)
            {
                double v = parser.Evaluate(ExpressionGenerator.Generate(rng, ExpressionDepth));
                if (!double.IsInfinity(v) && !double.IsNaN(v))
                {
                    checksum += v;
                    finite++;
                }
            }
            Console.WriteLine("evaluated " + Expressions + " expressions (" + finite + " finite), checksum=" + checksum.ToString("F4", System.Globalization.CultureInfo.InvariantCulture));
        }

        static string FormatTop(KeyValuePair<string, int>[] top)
        {
            StringBuilder sb = new StringBuilder();
            foreach (KeyValuePair<string, int> entry in top)
            {
                if (sb.Length > 0)
                    sb.Append(", ");
                sb.Append(entry.Key).Append(" (").Append(entry.Value).Append(')');
            }
            return sb.ToString();
        }
    }
}
