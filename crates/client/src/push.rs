//! Continuous profiling: each interval's profile pushed to Grafana Pyroscope (`sonde record
//! --push URL`; docs/CONTINUOUS.md).
//!
//! **The wire.** What Grafana's own client sends (PyPI `pyroscope-io` 1.4, on pyroscope-rs; its
//! requests are recorded by `crates/cli/tests/push.rs`): `POST {URL}/push.v1.PusherService/Push`,
//! a Connect unary call, `Content-Type: application/proto`, whose body is a
//! `push.v1.PushRequest`: one series per profile, its labels (`__name__` the profile type,
//! `service_name` the application, then tags), and one sample holding the gzip-compressed pprof
//! (`raw_profile`) with a random id. Decided: this API rather than the older `/ingest?name=…`,
//! because it is what the server's current clients use and it carries labels without a query
//! syntax to escape; docs/CONTINUOUS.md says more.
//!
//! **Never blocking, never growing.** [`Pusher::submit`] only queues: a thread sends. While the
//! server is down or slow, the queue holds at most its capacity and drops the oldest (counted);
//! failed sends are retried with exponential backoff (1 s doubling to 60 s); a refusal of the
//! credentials (401, 403) is logged once and that profile dropped rather than retried. Each
//! outcome that changes is logged once, not per attempt. Credentials come from the environment
//! and never appear in a log line.
//!
//! **Nothing there.** At the end the queue gets a bounded wait ([`Pusher::finish`]) for the last
//! pushes. While no attempt of the whole run could even connect (nothing listens at the URL, no
//! such host) — including the first attempt, made at the end when the run was shorter than an
//! interval — waiting for the next retry cannot be expected to help: the wait shrinks to
//! [`UNREACHED_FINISH`], time for a try or two should the server have come up meanwhile.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How to authenticate: from the environment ([`Auth::from_env`]).
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Basic { user: String, password: String },
    Bearer(String),
}

impl std::fmt::Debug for Auth {
    /// Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::None => "none",
            Auth::Basic { .. } => "basic",
            Auth::Bearer(_) => "bearer",
        })
    }
}

/// `SONDE_PUSH_USER`/`SONDE_PUSH_PASSWORD` (basic auth, e.g. Grafana Cloud's instance id and
/// token) or `SONDE_PUSH_TOKEN` (a bearer token).
pub const ENV_USER: &str = "SONDE_PUSH_USER";
pub const ENV_PASSWORD: &str = "SONDE_PUSH_PASSWORD";
pub const ENV_TOKEN: &str = "SONDE_PUSH_TOKEN";
/// `X-Scope-OrgID`: the tenant of a multi-tenant Pyroscope.
pub const ENV_TENANT: &str = "SONDE_PUSH_TENANT";

/// Why the credentials in the environment cannot be used ([`Auth::from_env`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    #[error("set either {ENV_USER}/{ENV_PASSWORD} or {ENV_TOKEN}, not both")]
    Both,
    #[error("{ENV_PASSWORD} is set without {ENV_USER}")]
    PasswordWithoutUser,
}

/// Why a push URL is refused ([`Target::new`]). A URL with credentials in it is never echoed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    #[error("--push {0}: not an http:// or https:// URL")]
    NotHttp(String),
    #[error("--push {0}: no host")]
    NoHost(String),
    #[error("--push {0}: the server's base URL, without a query or fragment")]
    QueryOrFragment(String),
    #[error(
        "--push: credentials go in {ENV_USER}/{ENV_PASSWORD} or {ENV_TOKEN}, not in the URL (they would reach logs)"
    )]
    Credentials,
}

impl Auth {
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Auth, AuthError> {
        match (get(ENV_USER), get(ENV_PASSWORD), get(ENV_TOKEN)) {
            (Some(_), _, Some(_)) => Err(AuthError::Both),
            (Some(user), password, None) => Ok(Auth::Basic { user, password: password.unwrap_or_default() }),
            (None, Some(_), _) => Err(AuthError::PasswordWithoutUser),
            (None, None, Some(token)) => Ok(Auth::Bearer(token)),
            (None, None, None) => Ok(Auth::None),
        }
    }
}

/// Where profiles go.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's base URL (`http://pyroscope:4040`), without the API path.
    pub url: String,
    pub auth: Auth,
    pub tenant: Option<String>,
}

impl Target {
    /// Checks the URL: `http://` or `https://`, a host, no query or fragment.
    pub fn new(url: &str, auth: Auth, tenant: Option<String>) -> Result<Target, UrlError> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| UrlError::NotHttp(url.to_string()))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(UrlError::NoHost(url.to_string()));
        }
        if url.contains(['?', '#', ' ']) {
            return Err(UrlError::QueryOrFragment(url.to_string()));
        }
        if rest.split('/').next().is_some_and(|authority| authority.contains('@')) {
            // Never echo it: it holds a password.
            return Err(UrlError::Credentials);
        }
        Ok(Target { url: url.trim_end_matches('/').to_string(), auth, tenant })
    }

    fn endpoint(&self) -> String {
        format!("{}/push.v1.PusherService/Push", self.url)
    }
}

/// One interval's profile of one process.
#[derive(Debug, Clone)]
pub struct Series {
    /// `(name, value)`, `__name__` and `service_name` first.
    pub labels: Vec<(String, String)>,
    /// gzip-compressed pprof.
    pub pprof: Vec<u8>,
}

/// What the pusher did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushStats {
    pub pushed: u64,
    /// Profiles dropped: the queue was full (oldest first), the server refused them, or time ran
    /// out at the end.
    pub dropped: u64,
    /// Failed attempts (each retried until the profile was sent or dropped).
    pub failures: u64,
    /// The most profiles queued at once.
    pub max_queued: usize,
    /// Some attempt reached the server (it answered, whatever it said).
    pub reached: bool,
    /// Failed attempts that could not connect at all.
    pub unreached: u64,
}

impl PushStats {
    /// Every attempt so far failed to connect: nothing seems to listen at the URL.
    pub fn never_reached(&self) -> bool {
        !self.reached && self.unreached > 0
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Series>,
    stats: PushStats,
    closing: bool,
    /// The last failure logged, so a repeated one is not logged again.
    last_logged: Option<String>,
    /// When the end gives up while no attempt has connected ([`UNREACHED_FINISH`] after
    /// [`Pusher::finish`] began).
    unreached_deadline: Option<Instant>,
}

impl State {
    /// When the end gives up: `deadline`, or earlier while nothing was ever reached.
    fn give_up_at(&self, deadline: &Mutex<Option<Instant>>) -> Option<Instant> {
        let deadline = *deadline.lock().unwrap_or_else(|e| e.into_inner());
        match self.unreached_deadline.filter(|_| self.stats.never_reached()) {
            Some(early) => Some(deadline.map_or(early, |d| d.min(early))),
            None => deadline,
        }
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    capacity: usize,
}

/// The sending thread and its queue.
pub struct Pusher {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
    deadline: Arc<Mutex<Option<Instant>>>,
}

/// A log line (the controller prints it on stderr, `sonde:`-prefixed).
pub type Log = Box<dyn Fn(&str) + Send + Sync>;

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// One request's whole budget (connect, send, answer).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// [`Pusher::finish`]'s wait when no attempt ever connected (see the module's documentation):
/// the next retry's backoff (1 s, then 2 s) falls within it.
pub const UNREACHED_FINISH: Duration = Duration::from_secs(3);

impl Pusher {
    /// Starts the sending thread; `capacity`: the most profiles kept while the server does not
    /// take them.
    pub fn start(target: Target, capacity: usize, log: Log) -> Pusher {
        let shared =
            Arc::new(Shared { state: Mutex::new(State::default()), wake: Condvar::new(), capacity: capacity.max(1) });
        let deadline = Arc::new(Mutex::new(None));
        let worker = {
            let (shared, deadline) = (shared.clone(), deadline.clone());
            std::thread::Builder::new()
                .name("sonde-push".into())
                .spawn(move || send_loop(&target, &shared, &deadline, &log))
                .ok()
        };
        Pusher { shared, worker, deadline }
    }

    /// Queues `series`; never blocks. When the queue is full the oldest profile is dropped.
    pub fn submit(&self, series: Series) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.queue.len() >= self.shared.capacity {
            state.queue.pop_front();
            state.stats.dropped += 1;
        }
        state.queue.push_back(series);
        state.stats.max_queued = state.stats.max_queued.max(state.queue.len());
        self.shared.wake.notify_all();
    }

    pub fn stats(&self) -> PushStats {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).stats
    }

    /// Sends what is queued, for at most `within` — at most [`UNREACHED_FINISH`] while no attempt
    /// could connect; what is left then is dropped (counted).
    pub fn finish(mut self, within: Duration) -> PushStats {
        {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = Some(now + within);
            state.unreached_deadline = Some(now + within.min(UNREACHED_FINISH));
            state.closing = true;
            self.shared.wake.notify_all();
        }
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let left = state.queue.len() as u64;
        state.queue.clear();
        state.stats.dropped += left;
        state.stats
    }
}

fn send_loop(target: &Target, shared: &Shared, deadline: &Mutex<Option<Instant>>, log: &Log) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(REQUEST_TIMEOUT))
        .http_status_as_error(false)
        .user_agent(concat!("sonde/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut backoff = FIRST_BACKOFF;
    let mut retry_at: Option<Instant> = None;
    loop {
        let series = {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let out_of_time = state.give_up_at(deadline).is_some_and(|d| Instant::now() >= d);
                if state.closing && (state.queue.is_empty() || out_of_time) {
                    return;
                }
                let waiting = retry_at.map(|at| at.saturating_duration_since(Instant::now()));
                match (state.queue.front(), waiting) {
                    (Some(_), None) | (Some(_), Some(Duration::ZERO)) => break,
                    (_, Some(wait)) => {
                        let wait = match state.give_up_at(deadline) {
                            Some(d) => wait.min(d.saturating_duration_since(Instant::now())),
                            None => wait,
                        };
                        state = shared.wake.wait_timeout(state, wait).unwrap_or_else(|e| e.into_inner()).0;
                        if retry_at.is_some_and(|at| Instant::now() >= at) {
                            retry_at = None;
                        }
                    }
                    (None, None) => state = shared.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
                }
            }
            state.queue.front().cloned().expect("a queued profile")
        };
        let outcome = send(&agent, target, &series);
        let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        match &outcome {
            Outcome::Failed { connected: false, .. } => state.stats.unreached += 1,
            _ => state.stats.reached = true,
        }
        match outcome {
            Outcome::Sent => {
                state.stats.pushed += 1;
                state.queue.pop_front();
                if state.last_logged.take().is_some() {
                    log(&format!("push: {} takes profiles again", target.url));
                }
                backoff = FIRST_BACKOFF;
                retry_at = None;
            }
            Outcome::Refused(why) => {
                // Retrying cannot help (credentials, a malformed profile): drop it, and slow down.
                state.stats.failures += 1;
                state.stats.dropped += 1;
                state.queue.pop_front();
                if state.last_logged.as_deref() != Some(why.as_str()) {
                    log(&format!("push: {}: {why}; profiles are dropped until it accepts them", target.url));
                    state.last_logged = Some(why);
                }
                retry_at = Some(Instant::now() + backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Outcome::Failed { why, .. } => {
                state.stats.failures += 1;
                if state.last_logged.as_deref() != Some(why.as_str()) {
                    log(&format!(
                        "push: {}: {why}; retrying with backoff (up to {} profiles are kept meanwhile)",
                        target.url, shared.capacity
                    ));
                    state.last_logged = Some(why);
                }
                retry_at = Some(Instant::now() + backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

enum Outcome {
    Sent,
    /// The server answered and will not take it.
    Refused(String),
    /// Down, slow, or a server error: worth trying again. `connected`: the connection was made
    /// (the server answered, or went quiet after it).
    Failed {
        why: String,
        connected: bool,
    },
}

/// Whether `e` happened before any connection was made: nothing listens there, no route, no
/// such host.
fn before_connecting(e: &ureq::Error) -> bool {
    use std::io::ErrorKind::*;
    match e {
        ureq::Error::Io(io) => {
            matches!(io.kind(), ConnectionRefused | HostUnreachable | NetworkUnreachable | AddrNotAvailable)
        }
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => true,
        ureq::Error::Timeout(t) => matches!(t, ureq::Timeout::Connect | ureq::Timeout::Resolve),
        _ => false,
    }
}

fn send(agent: &ureq::Agent, target: &Target, series: &Series) -> Outcome {
    let body = encode_push_request(series, &random_id());
    let mut request = agent.post(&target.endpoint()).header("Content-Type", "application/proto");
    match &target.auth {
        Auth::None => {}
        Auth::Basic { user, password } => {
            request = request.header("Authorization", &format!("Basic {}", base64(&format!("{user}:{password}"))));
        }
        Auth::Bearer(token) => request = request.header("Authorization", &format!("Bearer {token}")),
    }
    if let Some(tenant) = &target.tenant {
        request = request.header("X-Scope-OrgID", tenant);
    }
    match request.send(&body[..]) {
        Ok(response) => {
            let status = response.status().as_u16();
            match status {
                200..=299 => Outcome::Sent,
                401 | 403 => Outcome::Refused(format!("the server refused the credentials (HTTP {status})")),
                400 | 404 | 405 | 413 | 415 | 422 => {
                    Outcome::Refused(format!("the server refused the profile (HTTP {status})"))
                }
                _ => Outcome::Failed { why: format!("HTTP {status}"), connected: true },
            }
        }
        Err(e) => Outcome::Failed { why: one_line(&e.to_string()), connected: !before_connecting(&e) },
    }
}

fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// A random-enough id for a sample (the server deduplicates retries by it): 128 bits from the
/// clock and the process, as a UUID-shaped string.
fn random_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut a = std::collections::hash_map::RandomState::new().build_hasher();
    a.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let hi = a.finish();
    let mut b = std::collections::hash_map::RandomState::new().build_hasher();
    b.write_u64(hi ^ u64::from(std::process::id()));
    let lo = b.finish();
    let x = (u128::from(hi) << 64) | u128::from(lo);
    let h = format!("{x:032x}");
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

fn base64(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// `push.v1.PushRequest` (grafana/pyroscope `api/push/v1/push.proto`, `api/types/v1/types.proto`),
// written by hand: only these fields, with their tags.

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field.
fn field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    varint(out, u64::from(tag) << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `PushRequest { series: [RawProfileSeries { labels: [LabelPair], samples: [RawSample] }] }`.
pub fn encode_push_request(series: &Series, id: &str) -> Vec<u8> {
    let mut s = Vec::new();
    for (name, value) in &series.labels {
        let mut label = Vec::new();
        field(&mut label, 1, name.as_bytes());
        field(&mut label, 2, value.as_bytes());
        field(&mut s, 1, &label);
    }
    let mut sample = Vec::new();
    field(&mut sample, 1, &series.pprof);
    field(&mut sample, 2, id.as_bytes());
    field(&mut s, 2, &sample);
    let mut request = Vec::with_capacity(s.len() + 8);
    field(&mut request, 1, &s);
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_rfc_4648_says() {
        assert_eq!(base64(""), "");
        assert_eq!(base64("f"), "Zg==");
        assert_eq!(base64("fo"), "Zm8=");
        assert_eq!(base64("foo"), "Zm9v");
        assert_eq!(base64("user:pass"), "dXNlcjpwYXNz");
    }

    #[test]
    fn the_push_request_nests_as_the_proto_says() {
        let series = Series { labels: vec![("__name__".into(), "process_cpu".into())], pprof: vec![1, 2, 3] };
        let bytes = encode_push_request(&series, "x");
        // series (1) { labels (1) { name (1) "__name__", value (2) "process_cpu" }, samples (2) { raw_profile (1), ID (2) } }
        let label = [&[0x0A, 8][..], b"__name__", &[0x12, 11], b"process_cpu"].concat();
        let sample = [&[0x0A, 3, 1, 2, 3, 0x12, 1][..], b"x"].concat();
        let inner = [&[0x0A, label.len() as u8][..], &label, &[0x12, sample.len() as u8], &sample].concat();
        assert_eq!(bytes, [&[0x0A, inner.len() as u8][..], &inner].concat());
    }

    #[test]
    fn credentials_come_from_the_environment_and_never_print() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(Auth::from_env(env(&[])).unwrap(), Auth::None);
        let basic = Auth::from_env(env(&[(ENV_USER, "u"), (ENV_PASSWORD, "secret")])).unwrap();
        assert_eq!(format!("{basic:?}"), "basic");
        let bearer = Auth::from_env(env(&[(ENV_TOKEN, "secret")])).unwrap();
        assert!(!format!("{:?}", Target::new("http://h:4040", bearer, None).unwrap()).contains("secret"));
        assert_eq!(Auth::from_env(env(&[(ENV_USER, "u"), (ENV_TOKEN, "t")])), Err(AuthError::Both));
        assert_eq!(Auth::from_env(env(&[(ENV_PASSWORD, "p")])), Err(AuthError::PasswordWithoutUser));
    }

    #[test]
    fn urls_are_checked() {
        assert_eq!(
            Target::new("http://h:4040/", Auth::None, None).unwrap().endpoint(),
            "http://h:4040/push.v1.PusherService/Push"
        );
        assert!(Target::new("h:4040", Auth::None, None).is_err());
        assert!(Target::new("http://", Auth::None, None).is_err());
        assert!(Target::new("http://h/?x=1", Auth::None, None).is_err());
        let with_password = Target::new("https://u:secret@h", Auth::None, None).unwrap_err();
        assert_eq!(with_password, UrlError::Credentials);
        let with_password = with_password.to_string();
        assert!(with_password.contains("not in the URL") && !with_password.contains("secret"), "{with_password}");
    }

    #[test]
    fn a_full_queue_drops_its_oldest_and_nothing_blocks() {
        // Port 9 (discard) on loopback: nothing listens, every send fails fast.
        let target = Target::new("http://127.0.0.1:9", Auth::None, None).unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let logged = lines.clone();
        let pusher = Pusher::start(target, 3, Box::new(move |l| logged.lock().unwrap().push(l.to_string())));
        let started = Instant::now();
        for i in 0..10u8 {
            pusher.submit(Series { labels: Vec::new(), pprof: vec![i] });
        }
        assert!(started.elapsed() < Duration::from_millis(500), "submit blocked");
        let stats = pusher.finish(Duration::from_millis(300));
        assert_eq!(stats.pushed, 0);
        assert_eq!(stats.dropped, 10, "{stats:?}");
        assert!(stats.max_queued <= 3, "{stats:?}");
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1, "one line for one failure, however often it is retried: {lines:?}");
    }

    /// While no attempt could connect, the end does not wait out the time it was given: it gives
    /// up within [`UNREACHED_FINISH`].
    #[test]
    fn nothing_listening_gives_up_at_the_end_without_waiting_it_out() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let target = Target::new(&format!("http://127.0.0.1:{port}"), Auth::None, None).unwrap();
        let pusher = Pusher::start(target, 10, Box::new(|_| {}));
        // Queued just before the end (a run shorter than an interval): the first attempt is made
        // while finishing.
        for i in 0..3u8 {
            pusher.submit(Series { labels: Vec::new(), pprof: vec![i] });
        }
        let started = Instant::now();
        let stats = pusher.finish(Duration::from_secs(60));
        // Before: the whole minute, retrying with backoff.
        assert!(started.elapsed() < Duration::from_secs(30), "finish took {:?}", started.elapsed());
        assert_eq!((stats.pushed, stats.dropped, stats.reached), (0, 3, false), "{stats:?}");
        assert!(stats.unreached >= 1 && stats.unreached == stats.failures, "{stats:?}");
    }
}
