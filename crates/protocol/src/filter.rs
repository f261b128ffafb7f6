//! Which methods get enter/leave hooks.
//!
//! A pattern is a glob (`*` matches any run of characters, dots included; `?` one character) and
//! matches a method when it matches either its full name (`Namespace.Type.Method`, nested types
//! joined with `+`) or its assembly's simple name. The rules, in order:
//!
//! 1. a method matching any `--exclude` pattern is not traced;
//! 2. with `--all`, every other method is traced;
//! 3. with at least one `--include` pattern, exactly the methods matching one are traced — an
//!    include overrides the framework default, so `--include 'System.Linq.*'` traces LINQ;
//! 4. otherwise user code is traced and the framework is not, as decided by where a method's
//!    assembly was loaded from (`sonde_profile::origin`: the runtime's own directories and Mono's
//!    GAC are framework, the program named on the command line and its directory are not).
//!
//! The agent evaluates this once per method, when the runtime asks whether to hook it (the
//! function-ID mapper), so methods that are not traced cost nothing at run time.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MethodFilter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// Trace the framework too.
    pub all: bool,
}

impl MethodFilter {
    /// Whether a method named `name` of `assembly` is traced; `framework` is whether its assembly
    /// is framework code (`sonde_profile::origin::is_framework`).
    pub fn traces(&self, name: &str, assembly: &str, framework: bool) -> bool {
        let hit = |patterns: &[String]| patterns.iter().any(|p| glob(p, name) || glob(p, assembly));
        if hit(&self.exclude) {
            return false;
        }
        if self.all {
            return true;
        }
        if !self.include.is_empty() {
            return hit(&self.include);
        }
        !framework
    }

    /// True when the filter may select framework code, which is precompiled (ReadyToRun) and
    /// then has no hooks unless the runtime is told to ignore precompiled images.
    pub fn may_trace_framework(&self) -> bool {
        self.all || !self.include.is_empty()
    }
}

/// Glob match over chars: `*` any run (possibly empty), `?` exactly one character.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Classic greedy match with one backtrack point: linear in practice, never exponential.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether `assembly` is framework code where its location cannot tell.
    fn fw(assembly: &str) -> bool {
        sonde_profile::origin::framework_name(assembly)
    }

    fn filter(include: &[&str], exclude: &[&str], all: bool) -> MethodFilter {
        MethodFilter {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            all,
        }
    }

    #[test]
    fn glob_basics() {
        assert!(glob("Acme.*", "Acme.Calls.Fib"));
        assert!(glob("*.Fib", "Acme.Calls.Fib"));
        assert!(glob("Acme.?alls.*", "Acme.Calls.Fib"));
        assert!(glob("*", ""));
        assert!(!glob("Acme.*", "Acm"));
        assert!(!glob("?", ""));
        assert!(glob("*Grüße*", "Acme.Ünïcødé.Grüße"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }

    #[test]
    fn default_traces_user_code_only() {
        let f = MethodFilter::default();
        assert!(f.traces("Acme.Calls.Fib", "Calls", fw("Calls")));
        assert!(!f.traces("System.String.Concat", "System.Private.CoreLib", fw("System.Private.CoreLib")));
        assert!(!f.traces("Some.Type.M", "System.Private.CoreLib", fw("System.Private.CoreLib")));
        assert!(!f.traces("Microsoft.Win32.Registry.Get", "Microsoft.Win32.Registry", fw("Microsoft.Win32.Registry")));
        assert!(!f.traces("Foo.Bar", "mscorlib", fw("mscorlib")));
        // Location decides: Mono's C# compiler run by the user is user code, its namespaces too.
        assert!(f.traces("Mono.CSharp.Driver.Main", "mcs", false));
        assert!(!f.traces("Mono.CSharp.Driver.Main", "Mono.CSharp", true));
    }

    #[test]
    fn include_exclude_and_all() {
        assert!(filter(&["System.Linq.*"], &[], false).traces(
            "System.Linq.Enumerable.Sum",
            "System.Linq",
            fw("System.Linq")
        ));
        assert!(!filter(&["System.Linq.*"], &[], false).traces("Acme.Calls.Fib", "Calls", fw("Calls")));
        assert!(filter(&["Calls"], &[], false).traces("Acme.Calls.Fib", "Calls", fw("Calls")));
        assert!(!filter(&[], &["*.Fib"], false).traces("Acme.Calls.Fib", "Calls", fw("Calls")));
        assert!(!filter(&["Acme.*"], &["*.Fib"], false).traces("Acme.Calls.Fib", "Calls", fw("Calls")));
        assert!(filter(&[], &[], true).traces(
            "System.String.Concat",
            "System.Private.CoreLib",
            fw("System.Private.CoreLib")
        ));
        assert!(!filter(&[], &["System.*"], true).traces(
            "System.String.Concat",
            "System.Private.CoreLib",
            fw("System.Private.CoreLib")
        ));
    }

    /// A naive exponential reference matcher for short inputs.
    fn reference(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| reference(rest, &t[i..])),
            Some((&c, rest)) => !t.is_empty() && (c == '?' || c == t[0]) && reference(rest, &t[1..]),
        }
    }

    proptest! {
        #[test]
        fn glob_agrees_with_reference(p in "[ab*?.]{0,8}", t in "[ab.]{0,10}") {
            let pc: Vec<char> = p.chars().collect();
            let tc: Vec<char> = t.chars().collect();
            prop_assert_eq!(glob(&p, &t), reference(&pc, &tc));
        }
    }
}
