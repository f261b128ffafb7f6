//! The error simulator's section (`sonde record --inject`; docs/INJECT.md): per rule, how many
//! faults each method threw and where they were caught, so the report answers "did my error
//! handling work?".

use std::io::{self, Write};

use super::View;
use crate::fmt::{Clean, count};

pub(super) fn write(out: &mut impl Write, view: &View) -> io::Result<()> {
    let faults = &view.profile.events.faults;
    if faults.rules.is_empty() {
        return Ok(());
    }
    let thrown = faults.injected.len() as u64 + faults.dropped;
    let uncaught = faults.injected.iter().filter(|f| f.caught_in.is_none()).count() as u64;
    writeln!(out)?;
    write!(out, "Injected faults: {} ({} rules)", count(thrown), faults.rules.len())?;
    match uncaught {
        0 if thrown > 0 => writeln!(out, "; every one caught")?,
        0 => writeln!(out)?,
        n => writeln!(out, "; {} not caught: the program died of it", count(n))?,
    }
    let outcomes = faults.outcomes();
    for (i, rule) in faults.rules.iter().enumerate() {
        writeln!(out, "  {}", Clean(&rule.rule))?;
        let mine: Vec<_> = outcomes.iter().filter(|o| o.rule as usize == i).collect();
        for o in &mine {
            let caught = match o.caught_in {
                Some(m) => format!("caught in {}", view.name(m)),
                None => "NOT CAUGHT".to_owned(),
            };
            writeln!(out, "{:>12}  from {}, {caught}", count(o.count), view.name(o.method))?;
        }
        if mine.is_empty() && (rule.problems.is_empty() || !rule.methods.is_empty()) {
            let applied = match rule.methods.len() {
                0 => "no method it matches was compiled".to_owned(),
                n => format!("applied to {n} methods, none threw"),
            };
            writeln!(out, "{:>12}  {applied}", "-")?;
        }
        for p in &rule.problems {
            writeln!(out, "{:>12}  not applied: {}", "!", Clean(p))?;
        }
    }
    if faults.dropped > 0 {
        writeln!(
            out,
            "  ({} faults after the first {} are counted, not listed)",
            count(faults.dropped),
            count(faults.injected.len() as u64)
        )?;
    }
    Ok(())
}
