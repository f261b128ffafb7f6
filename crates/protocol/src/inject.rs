//! The error simulator's rules (`sonde record --inject RULE`, `--inject-file FILE`;
//! docs/INJECT.md): `METHODS=EXCEPTION[@after:N][@every:N][@p:X]`.
//!
//! - `METHODS` is a glob over a method's full name (`Namespace.Type.Method`, nested types joined
//!   with `+`; `*` any run of characters, `?` one), as `--include` takes them.
//! - `EXCEPTION` is a public exception type with a public constructor taking no arguments, by
//!   its full name (`System.TimeoutException`).
//! - Which calls throw, counted per method from its first call: without modifiers, every one;
//!   `@after:N` lets the first N calls through; `@every:N` then throws on every N-th call
//!   (calls N, 2N, … after those); `@p:X` throws on each such call with probability X (a
//!   pseudo-random sequence seeded by the method's name, so a run repeats itself on one thread).
//!
//! The controller parses the rules before it starts the program (a bad rule stops it there)
//! and hands them to the agent in [`crate::config::ENV_INJECT`], one per line, as written.

use std::fmt;

/// One rule.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectRule {
    /// Glob over `Namespace.Type.Method`.
    pub methods: String,
    /// `Namespace.Type` of the exception.
    pub exception: String,
    /// Calls let through before any throws.
    pub after: u64,
    /// Throw on every `every`-th call after those (1: each).
    pub every: u64,
    /// Probability that a call chosen by `after`/`every` throws (1: always).
    pub probability: f64,
}

/// `probability` is never NaN (parsing refuses it), so equality is an equivalence.
impl Eq for InjectRule {}

/// Why a rule cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("`{0}`: expected METHODS=EXCEPTION, e.g. Acme.Db.Query=System.TimeoutException")]
    NoEquals(String),
    #[error("`{0}`: no method pattern before `=`")]
    NoMethods(String),
    #[error("`{rule}`: `{exception}` is not a type name (Namespace.Type, letters, digits, `_`, `.`, `` ` ``)")]
    BadException { rule: String, exception: String },
    #[error("`{rule}`: unknown modifier `@{modifier}` (known: @after:N, @every:N, @p:X)")]
    UnknownModifier { rule: String, modifier: String },
    #[error("`{rule}`: `@{modifier}` needs {needs}")]
    BadValue { rule: String, modifier: String, needs: &'static str },
    #[error("`{rule}`: `@{modifier}` given twice")]
    Repeated { rule: String, modifier: String },
    #[error("`{0}`: a method pattern has no spaces or control characters")]
    BadMethods(String),
}

impl InjectRule {
    /// Reads one rule (surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<InjectRule, RuleError> {
        let rule = text.trim();
        let owned = || rule.to_string();
        let (methods, rest) = rule.split_once('=').ok_or_else(|| RuleError::NoEquals(owned()))?;
        let methods = methods.trim();
        if methods.is_empty() {
            return Err(RuleError::NoMethods(owned()));
        }
        if methods.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(RuleError::BadMethods(owned()));
        }
        let mut parts = rest.split('@');
        let exception = parts.next().unwrap_or_default().trim();
        if !is_type_name(exception) {
            return Err(RuleError::BadException { rule: owned(), exception: exception.to_string() });
        }
        let mut parsed = InjectRule {
            methods: methods.to_string(),
            exception: exception.to_string(),
            after: 0,
            every: 1,
            probability: 1.0,
        };
        let mut seen: Vec<&str> = Vec::new();
        for modifier in parts {
            let modifier = modifier.trim();
            let (name, value) = modifier.split_once(':').unwrap_or((modifier, ""));
            let bad = |needs| RuleError::BadValue { rule: owned(), modifier: name.to_string(), needs };
            if seen.contains(&name) {
                return Err(RuleError::Repeated { rule: owned(), modifier: name.to_string() });
            }
            match name {
                "after" => parsed.after = value.parse().map_err(|_| bad("a whole number of calls, e.g. @after:3"))?,
                "every" => {
                    parsed.every = value
                        .parse()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| bad("a whole number of calls from 1, e.g. @every:10"))?
                }
                "p" => {
                    parsed.probability = value
                        .parse::<f64>()
                        .ok()
                        .filter(|p| *p > 0.0 && *p <= 1.0)
                        .ok_or_else(|| bad("a probability above 0 and at most 1, e.g. @p:0.05"))?
                }
                _ => return Err(RuleError::UnknownModifier { rule: owned(), modifier: modifier.to_string() }),
            }
            seen.push(name);
        }
        Ok(parsed)
    }

    /// Reads a rules file: one rule per line; blank lines and lines starting with `#` are
    /// skipped. Errors name the line.
    pub fn parse_file(text: &str) -> Result<Vec<InjectRule>, (usize, RuleError)> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| InjectRule::parse(l).map_err(|e| (i + 1, e)))
            .collect()
    }

    /// Whether the `calls`-th call (from 1) of a matched method is chosen by `@after`/`@every`
    /// (`@p` is drawn on top of that).
    pub fn chooses(&self, calls: u64) -> bool {
        calls > self.after && (calls - self.after).is_multiple_of(self.every)
    }

    /// Whether the rule may match framework methods, which are precompiled and then never
    /// compiled (so never rewritten) unless the runtime is told to ignore precompiled code: a
    /// pattern that starts with a wildcard or with a framework namespace.
    pub fn may_match_framework(&self) -> bool {
        let m = &self.methods;
        m.starts_with(['*', '?'])
            || ["System", "Microsoft", "Internal", "Interop", "Windows"]
                .iter()
                .any(|ns| m.strip_prefix(ns).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '*', '?'])))
    }
}

/// The canonical text, which [`InjectRule::parse`] reads back to the same rule.
impl fmt::Display for InjectRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.methods, self.exception)?;
        if self.after != 0 {
            write!(f, "@after:{}", self.after)?;
        }
        if self.every != 1 {
            write!(f, "@every:{}", self.every)?;
        }
        if self.probability != 1.0 {
            write!(f, "@p:{}", self.probability)?;
        }
        Ok(())
    }
}

/// `Namespace.Type`: identifier characters and dots, not starting or ending with a dot.
fn is_type_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '`')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rules_read_as_the_issue_writes_them() {
        let r = InjectRule::parse("Acme.Db.Query=System.TimeoutException").unwrap();
        assert_eq!((r.methods.as_str(), r.exception.as_str()), ("Acme.Db.Query", "System.TimeoutException"));
        assert_eq!((r.after, r.every, r.probability), (0, 1, 1.0));
        let r = InjectRule::parse(" Acme.Net.*=System.IO.IOException@every:10 ").unwrap();
        assert_eq!((r.methods.as_str(), r.every), ("Acme.Net.*", 10));
        let r = InjectRule::parse("A.B=System.Exception@p:0.05@after:3").unwrap();
        assert_eq!((r.after, r.probability), (3, 0.05));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        let err = |t: &str| InjectRule::parse(t).unwrap_err().to_string();
        assert!(err("Acme.Db.Query").contains("expected METHODS=EXCEPTION"));
        assert!(err("=System.Exception").contains("no method pattern"));
        assert!(err("A.B=").contains("is not a type name"));
        assert!(err("A.B=System..X").contains("is not a type name"));
        assert!(err("A.B=System.Exception@often:3").contains("unknown modifier `@often:3`"));
        assert!(err("A.B=System.Exception@every:0").contains("from 1"));
        assert!(err("A.B=System.Exception@every:x").contains("from 1"));
        assert!(err("A.B=System.Exception@p:1.5").contains("at most 1"));
        assert!(err("A.B=System.Exception@p:0").contains("above 0"));
        assert!(err("A.B=System.Exception@after:-1").contains("whole number"));
        assert!(err("A.B=System.Exception@after:1@after:2").contains("given twice"));
        assert!(err("A B=System.Exception").contains("no spaces"));
    }

    #[test]
    fn a_rules_file_skips_comments_and_names_the_bad_line() {
        let rules =
            InjectRule::parse_file("# faults\n\nA.B=System.Exception\n  C.*=System.IO.IOException@every:2\n").unwrap();
        assert_eq!(rules.len(), 2);
        let (line, _) = InjectRule::parse_file("A.B=System.Exception\nnonsense\n").unwrap_err();
        assert_eq!(line, 2);
    }

    #[test]
    fn every_and_after_choose_calls() {
        let r = InjectRule::parse("A.B=System.Exception@every:5").unwrap();
        assert_eq!((1..=10).filter(|&n| r.chooses(n)).collect::<Vec<_>>(), [5, 10]);
        let r = InjectRule::parse("A.B=System.Exception@after:3").unwrap();
        assert_eq!((1..=6).filter(|&n| r.chooses(n)).collect::<Vec<_>>(), [4, 5, 6]);
        let r = InjectRule::parse("A.B=System.Exception@after:2@every:2").unwrap();
        assert_eq!((1..=8).filter(|&n| r.chooses(n)).collect::<Vec<_>>(), [4, 6, 8]);
    }

    #[test]
    fn framework_patterns_are_recognised() {
        let may = |m: &str| InjectRule::parse(&format!("{m}=System.Exception")).unwrap().may_match_framework();
        assert!(may("System.IO.File.ReadAllText"));
        assert!(may("*.Query"));
        assert!(may("Microsoft*"));
        assert!(!may("Acme.Db.Query"));
        assert!(!may("SystemsInc.Query"));
    }

    proptest! {
        #[test]
        fn display_reads_back(
            methods in "[A-Za-z*?][A-Za-z0-9_.*?]{0,12}",
            exception in "[A-Z][a-z]{0,5}(\\.[A-Z][a-z]{0,5}){0,3}",
            after in 0u64..1000,
            every in 1u64..1000,
            p in prop_oneof![Just(1.0), 0.001f64..1.0],
        ) {
            let rule = InjectRule { methods, exception, after, every, probability: p };
            prop_assert_eq!(InjectRule::parse(&rule.to_string()).unwrap(), rule);
        }
    }
}
