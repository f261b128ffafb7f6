//! `sonde record --push URL`: every `--push-every` seconds, each process's profile of that
//! interval (a delta, not the cumulative tree) goes to Grafana Pyroscope through
//! `sonde_client::push`, and a last one at the end (docs/CONTINUOUS.md).

use crate::cli::{PushLabels, RecordArgs};
use anyhow::Result;
use sonde_client::push::{Auth, Target};
pub use sonde_client::pushing::{Pushing, app_of_command, ticker};
use sonde_render::fmt::Clean;
use std::time::Duration;

/// Profiles kept while the server does not take them: 10 minutes at the default interval.
pub const QUEUE: usize = 60;

/// Checks `--push` and its companions; `None` without `--push`.
pub fn start(args: &RecordArgs) -> Result<Option<Pushing>> {
    let Some(url) = &args.push else {
        if args.app.is_some() || !args.labels.tags.is_empty() || args.labels.push_every.is_some() {
            anyhow::bail!("--app, --tag and --push-every go with --push URL");
        }
        return Ok(None);
    };
    if args.mode() != sonde_profile::Mode::Sampling {
        anyhow::bail!(
            "--push goes with --mode sampling (continuous profiling samples; it never changes the program's code)"
        );
    }
    to(url, args.app.clone(), &args.labels, QUEUE).map(Some)
}

/// A pusher to `url`; `queue`: the most profiles kept while the server does not take them.
pub fn to(url: &str, app: Option<String>, labels: &PushLabels, queue: usize) -> Result<Pushing> {
    let auth = Auth::from_env(|k| std::env::var(k).ok()).map_err(|e| anyhow::anyhow!("--push: {e}"))?;
    let tenant = std::env::var(sonde_client::push::ENV_TENANT).ok();
    let target = Target::new(url, auth, tenant)?;
    let tags = labels.tags.iter().map(|t| parse_tag(t)).collect::<Result<Vec<_>>>()?;
    let every = Duration::from_secs(labels.push_every.unwrap_or(10));
    Ok(Pushing::new(target, every, app, tags, queue, |line| crate::say!("sonde: {}", Clean(line))))
}

/// `KEY=VALUE`: a label name (letters, digits, `_` and `.`, not starting with a digit; not one
/// Sonde sets) and a value without control characters.
fn parse_tag(tag: &str) -> Result<(String, String)> {
    let (key, value) = tag.split_once('=').ok_or_else(|| anyhow::anyhow!("--tag {tag}: expected KEY=VALUE"))?;
    let valid = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !valid {
        anyhow::bail!("--tag {tag}: `{key}` is not a label name (letters, digits, `_`, `.`)");
    }
    if RESERVED.contains(&key) {
        anyhow::bail!("--tag {tag}: Sonde sets `{key}` itself");
    }
    if value.chars().any(char::is_control) {
        anyhow::bail!("--tag {key}: the value has control characters");
    }
    Ok((key.to_string(), value.to_string()))
}

/// The labels Sonde sets on every profile.
const RESERVED: [&str; 6] =
    ["__name__", "service_name", "host.name", "process.pid", "process.runtime.name", "process.runtime.version"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_label_names_and_values() {
        assert_eq!(parse_tag("region=eu-west-1").unwrap(), ("region".into(), "eu-west-1".into()));
        assert_eq!(parse_tag("k8s.pod=a=b").unwrap(), ("k8s.pod".into(), "a=b".into()));
        assert!(parse_tag("region").is_err());
        assert!(parse_tag("1st=x").is_err());
        assert!(parse_tag("a-b=x").is_err());
        assert!(parse_tag("service_name=x").is_err());
        assert!(parse_tag("a=x\ny").is_err());
    }
}
