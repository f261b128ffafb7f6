//! Small formatting helpers for the text report: durations, counts, percentages, names.

/// A duration with three or four significant digits in the largest unit that keeps it at or
/// above one: `850 ns`, `1.25 µs`, `12.3 µs`, `456.7 ms`, `2.05 s`. Digits are truncated, not
/// rounded, so a value never rounds up into the next unit (`999.9 µs`, not `1000.0 µs`).
pub fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => decimal(ns / 10, "µs"),
        1_000_000..1_000_000_000 => decimal(ns / 10_000, "ms"),
        _ => decimal(ns / 10_000_000, "s"),
    }
}

/// Two decimals below ten units, one above.
fn decimal(hundredths: u64, unit: &str) -> String {
    if hundredths < 1_000 {
        format!("{}.{:02} {unit}", hundredths / 100, hundredths % 100)
    } else {
        let tenths = hundredths / 10;
        format!("{}.{} {unit}", tenths / 10, tenths % 10)
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size in bytes: `512 B`, `1.5 MB` (powers of 1024, one decimal).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `part` as a percentage of `whole` with one decimal, or `-` when there is no whole.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".to_owned();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

pub use sonde_profile::clean::{Clean, unsafe_in_terminal};

/// The command as a user could paste it into a POSIX shell: arguments that need it are
/// single-quoted.
pub fn command_line(args: &[String]) -> String {
    let quote = |arg: &String| {
        let plain = !arg.is_empty() && arg.chars().all(|c| c.is_alphanumeric() || "-_./=:,+@%".contains(c));
        if plain { arg.clone() } else { format!("'{}'", arg.replace('\'', r"'\''")) }
    };
    args.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// `text` as XML or HTML text or attribute value: the five markup characters as entities, and
/// control characters XML 1.0 does not allow at all as `?` (the SVG, HTML and Cobertura exports).
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Not allowed in XML 1.0 at all.
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        let cases = [
            (0, "0 ns"),
            (999, "999 ns"),
            (1_000, "1.00 µs"),
            (1_259, "1.25 µs"),
            (12_345, "12.3 µs"),
            (999_999, "999.9 µs"),
            (4_567_000, "4.56 ms"),
            (456_789_000, "456.7 ms"),
            (2_050_000_000, "2.05 s"),
            (3_600_000_000_000, "3600.0 s"),
        ];
        for (ns, text) in cases {
            assert_eq!(duration(ns), text);
        }
    }

    #[test]
    fn counts_percentages_and_names() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(1, 0), "-");
        assert_eq!(Clean("a\u{1b}[31mb\n").to_string(), "a\\u{1b}[31mb\\n");
        assert_eq!(Clean("\u{1b}]0;t\u{7}\u{9b}2J").to_string(), "\\u{1b}]0;t\\u{7}\\u{9b}2J");
        assert_eq!(Clean("abc\u{202E}fed\u{2066}x").to_string(), "abc\\u{202e}fed\\u{2066}x");
        assert_eq!(Clean("Grüße.計算").to_string(), "Grüße.計算", "other Unicode is shown as it is");
    }

    #[test]
    fn command_lines_are_quoted_for_a_shell() {
        let args = ["dotnet", "app.dll", "two words", "it's", ""].map(String::from);
        assert_eq!(command_line(&args), r#"dotnet app.dll 'two words' 'it'\''s' ''"#);
    }
}
