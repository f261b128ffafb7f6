//! `sonde top [--pid PID | -- COMMAND ...]`: the hot methods of a running .NET program, live, in
//! the terminal — like `py-spy top`. Built on `sonde_client::Recording`: a snapshot every
//! `--refresh` seconds (the agent sends its cumulative trees; see docs/CLIENT.md for why that and
//! not deltas), analysed and drawn with ratatui.
//!
//! Keys: `q` (or Esc, Ctrl-C) quits; `s` cycles the sort column (%self, %total, method); `t` / `T`
//! steps through the threads (all, then each); `p` freezes the view (collection goes on; `p`
//! again shows the latest). Quitting writes nothing unless `-o FILE` was given; an attached
//! process is detached and runs on; a program `top` started is sent SIGTERM (its output was
//! discarded: the screen is the view's).
//!
//! Every name shown comes from the profiled program: each passes through [`Clean`], so none can
//! drive the terminal.

use crate::cli::TopArgs;
use crate::output::Output;
use anyhow::{Context, Result};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use sonde_client::{Options, Recording};
use sonde_profile::{Analysis, Mode, Profile};
use sonde_render::fmt::{Clean, bytes, count, duration};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sort {
    SelfPct,
    TotalPct,
    Name,
}

impl Sort {
    fn next(self) -> Sort {
        match self {
            Sort::SelfPct => Sort::TotalPct,
            Sort::TotalPct => Sort::Name,
            Sort::Name => Sort::SelfPct,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Sort::SelfPct => "%self",
            Sort::TotalPct => "%total",
            Sort::Name => "method",
        }
    }
}

/// What the view shows: the latest profile and how it is looked at.
struct View {
    profile: Option<Profile>,
    /// Samples (or calls) per second since the previous profile.
    rate: f64,
    previous: Option<(Instant, u64)>,
    sort: Sort,
    /// `None`: all threads; else an index into the profile's threads.
    thread: Option<usize>,
    frozen: bool,
    ended: bool,
    note: Option<String>,
    header: String,
    /// The runtime's counters per second since the previous profile.
    counters: Counters,
    previous_events: Option<(Instant, EventTotals)>,
}

/// Cumulative counts of the runtime's events in a profile, to turn into rates.
#[derive(Debug, Clone, Copy, Default)]
struct EventTotals {
    collections: u64,
    pause_ns: u64,
    alloc_bytes: u64,
    thrown: u64,
    wait_ns: u64,
    compiled: u64,
}

impl EventTotals {
    fn of(profile: &Profile) -> EventTotals {
        let events = &profile.events;
        EventTotals {
            collections: events.gc.count(),
            pause_ns: events.gc.pause_ns_total,
            alloc_bytes: events.allocations.by_type.iter().map(|a| a.bytes).sum(),
            thrown: events.exceptions.iter().map(|e| e.thrown).sum(),
            wait_ns: events.nodes.iter().map(|e| e.wait_ns).sum(),
            compiled: events.loading.methods_compiled,
        }
    }
}

/// The live counters line: rates over the last refresh, and the heap after the last collection.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    gc_per_s: f64,
    /// Share of wall time the runtime was paused for collections.
    gc_pause_share: f64,
    alloc_bytes_per_s: f64,
    thrown_per_s: f64,
    /// Lock-contention wait per second of wall time (summed over threads).
    wait_share: f64,
    compiled_per_s: f64,
}

pub fn top(args: TopArgs) -> Result<i32> {
    let output = args.output.as_deref().map(|o| Output::prepare(o, args.force)).transpose()?;
    let mut options = match args.mode {
        Mode::Sampling => Options::sampling_with(args.rate, args.clock),
        Mode::Tracing => {
            let mut options = Options::new(Mode::Tracing, sonde_protocol::config::DEFAULT_INTERVAL_US);
            options.config.clock = args.clock;
            options
        }
        Mode::Coverage => {
            anyhow::bail!("sonde top shows sampling or tracing: record coverage with sonde record --mode coverage")
        }
    };
    options.program_output = false;
    let mut recording = match args.pid {
        Some(pid) => Recording::attach(pid, &options)?.0,
        None => Recording::launch(&args.command, &options)?,
    };
    // Notes from the library go to the status line, not over the screen.
    let notes: Arc<Mutex<Option<String>>> = Arc::default();
    {
        let notes = notes.clone();
        sonde_client::set_notes(move |text| *notes.lock().unwrap_or_else(|e| e.into_inner()) = Some(text.to_string()));
    }
    let quit = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, quit.clone()).context("cannot install a signal handler")?;
    }
    let header = format!(
        "process {} {}: {}",
        recording.pid(),
        if recording.attached() { "(attached)" } else { "(started by sonde)" },
        Clean(&recording.command().join(" "))
    );
    let mut view = View {
        profile: None,
        rate: 0.0,
        previous: None,
        sort: Sort::SelfPct,
        thread: None,
        frozen: false,
        ended: false,
        note: None,
        header,
        counters: Counters::default(),
        previous_events: None,
    };

    let mut terminal = ratatui::init();
    let result = run(&mut terminal, &mut recording, &mut view, &args, &notes, &quit);
    ratatui::restore();
    result?;

    // Quit: the recording ends; its profile is written only when asked for.
    let launched = !recording.attached();
    if launched && recording.running() {
        sonde_client::launch::send_signal(recording.pid(), rustix::process::Signal::TERM);
    }
    let pid = recording.pid();
    let profile = recording.finish();
    if let Some(output) = output {
        let profile = profile?;
        let path = output.save(&profile, pid, true)?;
        crate::say!("sonde: wrote {}", Clean(&path.display().to_string()));
    }
    Ok(0)
}

fn run(
    terminal: &mut ratatui::DefaultTerminal,
    recording: &mut Recording,
    view: &mut View,
    args: &TopArgs,
    notes: &Mutex<Option<String>>,
    quit: &AtomicBool,
) -> Result<()> {
    let mut next = Instant::now();
    loop {
        if Instant::now() >= next {
            next = Instant::now() + args.refresh;
            if !view.ended {
                let running = recording.running();
                if let Some(update) = recording.snapshot(Duration::from_millis(500)) {
                    view.ended = update.last || !running;
                    if !view.frozen {
                        view.take(update.profile);
                    }
                } else if !running {
                    view.ended = true;
                }
            }
            view.note = notes.lock().unwrap_or_else(|e| e.into_inner()).clone();
        }
        terminal.draw(|frame| view.draw(frame))?;
        let wait = next.saturating_duration_since(Instant::now()).min(Duration::from_millis(200));
        if event::poll(wait)?
            && let Event::Key(key) = event::read()?
        {
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Ok(()),
                KeyCode::Char('s') => view.sort = view.sort.next(),
                KeyCode::Char('t') => view.step_thread(1),
                KeyCode::Char('T') => view.step_thread(-1),
                KeyCode::Char('p') => {
                    view.frozen = !view.frozen;
                    next = Instant::now();
                }
                _ => {}
            }
        }
        if quit.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}

impl View {
    fn take(&mut self, profile: Profile) {
        let weight = total_weight(&profile);
        let now = Instant::now();
        if let Some((then, before)) = self.previous {
            let secs = now.duration_since(then).as_secs_f64();
            if secs > 0.0 {
                self.rate = weight.saturating_sub(before) as f64 / secs;
            }
        }
        self.previous = Some((now, weight));
        let totals = EventTotals::of(&profile);
        if let Some((then, before)) = self.previous_events {
            let secs = now.duration_since(then).as_secs_f64();
            if secs > 0.0 {
                let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 / secs;
                self.counters = Counters {
                    gc_per_s: rate(totals.collections, before.collections),
                    gc_pause_share: rate(totals.pause_ns, before.pause_ns) / 1e9,
                    alloc_bytes_per_s: rate(totals.alloc_bytes, before.alloc_bytes),
                    thrown_per_s: rate(totals.thrown, before.thrown),
                    wait_share: rate(totals.wait_ns, before.wait_ns) / 1e9,
                    compiled_per_s: rate(totals.compiled, before.compiled),
                };
            }
        }
        self.previous_events = Some((now, totals));
        if self.thread.is_some_and(|t| t >= profile.threads.len()) {
            self.thread = None;
        }
        self.profile = Some(profile);
    }

    fn step_thread(&mut self, by: isize) {
        let count = self.profile.as_ref().map_or(0, |p| p.threads.len()) as isize;
        // Positions: 0 is "all", 1..=count the threads.
        let position = self.thread.map_or(0, |t| t as isize + 1);
        let next = (position + by).rem_euclid(count + 1);
        self.thread = (next > 0).then(|| (next - 1) as usize);
    }

    fn draw(&self, frame: &mut ratatui::Frame) {
        let [head, table, foot] =
            Layout::vertical([Constraint::Length(4), Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
        let Some(profile) = &self.profile else {
            let text =
                vec![Line::from(format!("sonde top — {}", self.header)), Line::from("waiting for the first snapshot…")];
            frame.render_widget(Paragraph::new(text), head);
            return;
        };
        let tracing = profile.run.mode == Mode::Tracing;
        let thread_label = match self.thread {
            None => "all".to_string(),
            Some(t) => {
                let thread = &profile.threads[t];
                format!("{} {}", thread.os_tid, Clean(thread.name.as_deref().unwrap_or("")))
            }
        };
        let state = match (self.ended, self.frozen) {
            (true, _) => "  [process ended]",
            (false, true) => "  [paused: p resumes]",
            _ => "",
        };
        let head_text = vec![
            Line::from(format!("sonde top — {}", self.header)),
            Line::from(format!(
                "{} {}   threads {}   {}/s {}   {} {}   elapsed {}",
                Clean(&profile.run.runtime.kind),
                Clean(&profile.run.runtime.version),
                profile.threads.len(),
                if tracing { "calls" } else { "samples" },
                count(self.rate.round() as u64),
                if tracing { "calls" } else { "samples" },
                count(total_weight(profile)),
                duration(profile.run.wall_ns),
            )),
            Line::from(counters_line(profile, &self.counters)),
            Line::from(format!("sort {}   thread {thread_label}{state}", self.sort.label())),
        ];
        frame.render_widget(Paragraph::new(head_text), head);

        let analysis = match self.thread {
            None => Analysis::new(profile),
            Some(t) => Analysis::for_thread(profile, t as u32),
        };
        let totals = analysis.totals();
        let all = if tracing { totals.total_ns } else { totals.total_samples }.max(1) as f64;
        let mut rows: Vec<(usize, f64, f64)> = analysis
            .methods()
            .iter()
            .enumerate()
            .filter(|(_, m)| if tracing { m.calls > 0 } else { m.total_samples > 0 })
            .map(|(id, m)| {
                let (own, total) = if tracing {
                    (m.self_ns as f64, m.total_ns as f64)
                } else {
                    (m.self_samples as f64, m.total_samples as f64)
                };
                (id, 100.0 * own / all, 100.0 * total / all)
            })
            .collect();
        match self.sort {
            Sort::SelfPct => rows.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.total_cmp(&a.2))),
            Sort::TotalPct => rows.sort_by(|a, b| b.2.total_cmp(&a.2).then(b.1.total_cmp(&a.1))),
            Sort::Name => rows.sort_by(|a, b| profile.methods[a.0].name.cmp(&profile.methods[b.0].name)),
        }
        let mut header = vec!["%self", "%total", "self", "total"];
        if tracing {
            header.push("calls");
        }
        header.push("method");
        let body = rows.iter().take(table.height as usize).map(|&(id, own, total)| {
            let m = analysis.method(id as u32);
            let mut cells = vec![
                Cell::from(format!("{own:5.1}")),
                Cell::from(format!("{total:6.1}")),
                Cell::from(duration(m.self_ns)),
                Cell::from(duration(m.total_ns)),
            ];
            if tracing {
                cells.push(Cell::from(count(m.calls)));
            }
            cells.push(Cell::from(Clean(&profile.methods[id].name).to_string()));
            Row::new(cells)
        });
        let mut widths =
            vec![Constraint::Length(6), Constraint::Length(7), Constraint::Length(10), Constraint::Length(10)];
        if tracing {
            widths.push(Constraint::Length(12));
        }
        widths.push(Constraint::Min(10));
        let table_widget =
            Table::new(body, widths).header(Row::new(header).style(Style::default().add_modifier(Modifier::REVERSED)));
        frame.render_widget(table_widget, table);

        let mut help = "q quit   s sort   t/T thread   p pause".to_string();
        if let Some(note) = &self.note {
            help.push_str("   ");
            help.push_str(&Clean(note).to_string());
        }
        frame.render_widget(Paragraph::new(help), foot);
    }
}

/// `gc 2.0/s (12 in all) paused 1.5%  heap 24.0 MB  alloc 120.0 MB/s  exceptions 5/s  lock wait
/// 3.0%  jit 40/s`: the runtime's counters over the last refresh (allocations and lock waits only
/// when recorded).
fn counters_line(profile: &Profile, c: &Counters) -> String {
    let events = &profile.events;
    let heap = events.gc.last_heap_bytes();
    let mut line =
        format!("gc {:.1}/s ({} in all) paused {:.1}%", c.gc_per_s, count(events.gc.count()), 100.0 * c.gc_pause_share);
    if let Some(heap) = heap {
        line.push_str(&format!("  heap {}", bytes(heap)));
    }
    if events.allocations.sampling != sonde_profile::AllocSampling::Off {
        line.push_str(&format!("  alloc {}/s", bytes(c.alloc_bytes_per_s as u64)));
    }
    line.push_str(&format!("  exceptions {:.0}/s", c.thrown_per_s));
    // Contention is recorded only when asked for (`--events`): shown once there was some.
    if events.nodes.iter().any(|e| e.wait_ns > 0) {
        line.push_str(&format!("  lock wait {:.1}%", 100.0 * c.wait_share));
    }
    line.push_str(&format!("  jit {:.0}/s", c.compiled_per_s));
    line
}

/// Samples (sampling) or calls (tracing) in the whole profile.
fn total_weight(profile: &Profile) -> u64 {
    match profile.run.mode {
        Mode::Sampling => profile.nodes.iter().map(|n| n.self_samples).sum(),
        Mode::Tracing | Mode::Coverage => profile.nodes.iter().map(|n| n.calls).sum(),
    }
}
