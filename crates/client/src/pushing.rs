//! Continuous profiling's side of a recording (`sonde record --push`, `sonde daemon`): each
//! process's profile of every interval (a delta of the cumulative trees, not the trees) goes to
//! the [`Pusher`] with its labels, and a last one at the end (docs/CONTINUOUS.md).

use crate::assemble::{RunFacts, assemble};
use crate::collector::{Agents, Session};
use crate::push::{PushStats, Pusher, Series, Target};
use sonde_profile::Profile;
use sonde_render::{PprofRenderer, PprofSeries, Renderer, has_series};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the end of a recording waits for the last pushes.
const FINAL_PUSH: Duration = Duration::from_secs(10);

/// The pushing side of a recording.
pub struct Pushing {
    pusher: Pusher,
    every: Duration,
    last: Instant,
    app: Option<String>,
    tags: Vec<(String, String)>,
    host: String,
    /// Per process: what was pushed up to now (the cumulative profile of the last push).
    pushed: HashMap<u32, Profile>,
    /// Per process (pid as it knows itself): its application name, when it names one itself
    /// (`SONDE_APP` in its environment: the daemon).
    apps: HashMap<u32, String>,
    /// Intervals queued (one per process per push, whatever number of profile types it has).
    intervals: u64,
    /// The server's URL, for the last line.
    url: String,
    /// Where its lines go (the pusher's too).
    log: Arc<dyn Fn(&str) + Send + Sync>,
}

/// What a watched recording does at each wake-up ([`crate::Recording::watch`]'s `tick`): with
/// a pushing side, each process's interval when one is due, its facts from `facts`.
pub fn ticker<'a>(
    pushing: &'a mut Option<Pushing>,
    facts: impl Fn(&Session) -> RunFacts + Copy + 'a,
) -> impl FnMut(&crate::Recording) + 'a {
    move |recording| {
        if let Some(pushing) = pushing.as_mut() {
            pushing.tick(&recording.agents(), facts);
        }
    }
}

impl Pushing {
    /// Pushes to `target` every `every`, each profile labelled with its application (`app`,
    /// else the one a process names itself, else its command's: [`app_of_command`]), `tags`, the
    /// host and the process; at most `queue` profiles wait for the server. `log` takes the lines
    /// worth a user's attention (a server that refuses, or comes back; what was pushed at the end).
    pub fn new(
        target: Target,
        every: Duration,
        app: Option<String>,
        tags: Vec<(String, String)>,
        queue: usize,
        log: impl Fn(&str) + Send + Sync + 'static,
    ) -> Pushing {
        let log: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(log);
        let url = target.url.clone();
        let pusher = Pusher::start(
            target,
            queue,
            Box::new({
                let log = log.clone();
                move |line| log(line)
            }),
        );
        Pushing {
            pusher,
            every,
            last: Instant::now(),
            app,
            tags,
            host: hostname(),
            pushed: HashMap::new(),
            apps: HashMap::new(),
            intervals: 0,
            url,
            log,
        }
    }

    /// Pushes each process's interval when one is due.
    pub fn tick(&mut self, agents: &Agents, facts: impl Fn(&Session) -> RunFacts) {
        if self.due() {
            self.push_agents(agents, facts);
        }
    }

    /// Whether an interval has passed since the last push (and starts the next one if so).
    pub fn due(&mut self) -> bool {
        if self.last.elapsed() < self.every {
            return false;
        }
        self.last = Instant::now();
        true
    }

    /// Pushes the interval of each process `agents` record.
    pub fn push_agents(&mut self, agents: &Agents, facts: impl Fn(&Session) -> RunFacts) {
        let mut profiles = Vec::new();
        agents.each_session(|s| {
            if let Some(profile) = assemble(s, facts(s)) {
                profiles.push(profile);
            }
        });
        for profile in profiles {
            self.push(profile);
        }
    }

    /// Queues what `profile` (cumulative) gained since the last push of its process.
    fn push(&mut self, profile: Profile) {
        let pid = profile.run.pid;
        let interval = match self.pushed.get(&pid) {
            Some(earlier) => sonde_profile::delta::since(earlier, &profile),
            None => sonde_profile::delta::since(&empty_like(&profile), &profile),
        };
        let app = self.app_name(&profile);
        let mut queued = false;
        for series in PprofSeries::PUSHED {
            let empty = match series {
                PprofSeries::Cpu => interval.nodes.iter().all(|n| n.self_samples == 0),
                _ => !has_series(&interval, series),
            };
            if empty {
                continue;
            }
            let mut pprof = Vec::new();
            let renderer = PprofRenderer { series };
            if let Err(e) = renderer.render(&interval, &mut pprof) {
                (self.log)(&format!("push: cannot encode the profile of process {pid}: {e}"));
                break;
            }
            let mut labels = vec![
                ("__name__".to_string(), series.pyroscope_name().to_string()),
                ("service_name".to_string(), app.clone()),
            ];
            labels.extend(self.tags.iter().cloned());
            labels.push(("host.name".into(), self.host.clone()));
            labels.push(("process.pid".into(), pid.to_string()));
            labels.push(("process.runtime.name".into(), profile.run.runtime.kind.clone()));
            labels.push(("process.runtime.version".into(), profile.run.runtime.version.clone()));
            self.pusher.submit(Series { labels, pprof });
            queued = true;
        }
        self.intervals += u64::from(queued);
        self.pushed.insert(pid, profile);
    }

    /// `--app`, else the program's own name: the entry assembly's (`Shop.Api.dll` → `Shop.Api`)
    /// or the executable's, as the command line gives it.
    pub fn app_name(&self, profile: &Profile) -> String {
        if let Some(app) = self.apps.get(&profile.run.pid).or(self.app.as_ref()) {
            return app.clone();
        }
        app_of_command(&profile.run.command).unwrap_or_else(|| format!("pid-{}", profile.run.pid))
    }

    /// Names the application of process `pid` (as it knows itself), over `--app`.
    pub fn name_app(&mut self, pid: u32, app: String) {
        self.apps.insert(pid, app);
    }

    /// The last interval of the processes `sessions` recorded (one that ended, or detached), and
    /// forgets them.
    pub fn push_final(&mut self, sessions: &[Session], facts: impl Fn(&Session) -> RunFacts) {
        for s in sessions {
            if let Some(profile) = assemble(s, facts(s)) {
                let pid = profile.run.pid;
                self.push(profile);
                self.pushed.remove(&pid);
                self.apps.remove(&pid);
            }
        }
    }

    pub fn stats(&self) -> PushStats {
        self.pusher.stats()
    }

    /// The last interval of every process, then waits (bounded) for the queue to drain; says
    /// what was pushed and what was not. `written`: a profile file is written too (`sonde
    /// record`), so what was not pushed is kept there.
    pub fn finish(mut self, sessions: &[Session], facts: impl Fn(&Session) -> RunFacts, quiet: bool, written: bool) {
        for s in sessions {
            if let Some(profile) = assemble(s, facts(s)) {
                self.push(profile);
            }
        }
        // Nothing ever answered: the wait is short (`sonde_client::push`), and one line says so.
        let stats = self.pusher.finish(FINAL_PUSH);
        if stats.pushed == 0 && stats.never_reached() {
            let kept = if written { " (the profile file has them)" } else { "" };
            let intervals = match self.intervals {
                1 => "1 interval was".to_string(),
                n => format!("{n} intervals were"),
            };
            (self.log)(&format!("push: nothing answered at {}: {intervals} not sent{kept}", self.url));
            return;
        }
        if !quiet || stats.dropped > 0 {
            let dropped = match stats.dropped {
                0 => String::new(),
                n => format!(", {n} dropped (the server did not take them)"),
            };
            (self.log)(&format!("pushed {} profiles{dropped}", stats.pushed));
        }
    }
}

/// A profile with nothing in it, as before the first push.
fn empty_like(profile: &Profile) -> Profile {
    let mut empty = Profile { nodes: Vec::new(), ..profile.clone() };
    empty.run.wall_ns = 0;
    empty.run.samples_taken = 0;
    empty
}

/// The application's name from a command line: the first `.dll`/`.exe` argument's stem, else
/// the program's file name (`dotnet` itself is not a name).
pub fn app_of_command(command: &[String]) -> Option<String> {
    let stem = |arg: &String| {
        std::path::Path::new(arg).file_stem().map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
    };
    command
        .iter()
        .find(|a| a.ends_with(".dll") || a.ends_with(".exe"))
        .and_then(stem)
        .or_else(|| command.first().and_then(stem).filter(|s| s != "dotnet" && s != "mono"))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_is_named_after_its_entry_assembly() {
        let c = |v: &[&str]| app_of_command(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(c(&["/usr/bin/dotnet", "/srv/Shop.Api.dll", "--urls", "x"]), Some("Shop.Api".into()));
        assert_eq!(c(&["mono", "Tool.exe"]), Some("Tool".into()));
        assert_eq!(c(&["/srv/shop/Shop"]), Some("Shop".into()));
        assert_eq!(c(&["dotnet"]), None);
    }
}
