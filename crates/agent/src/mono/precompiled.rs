//! Precompiled (AOT) code on Mono, in tracing and coverage modes: code loaded from an AOT image
//! (`mscorlib.dll.so`, `mcs.exe.so` in Debian's `/usr/lib/mono/aot-cache/`, or `App.exe.so`
//! beside an assembly) has no enter/leave instrumentation and no coverage counters, so the
//! profile would silently miss its calls. The controller switches AOT off for these modes
//! (`-O=-aot` in `MONO_ENV_OPTIONS`, whatever the command: docs/ARCHITECTURE.md); the program's
//! own command line can switch it on again (`mono -O=all`, `--full-aot`), and this module tells
//! the profile when it did: Mono maps an image only when it uses its code, so the images mapped
//! into the process are the ones whose code ran (or could run) unseen.

use sonde_profile::Mode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Set at start-up in tracing and coverage modes.
static WATCH: AtomicBool = AtomicBool::new(false);

/// Starts looking for precompiled images at each snapshot (tracing and coverage modes only:
/// sampling sees AOT code like any other).
pub fn watch(mode: Mode) {
    let watch = matches!(mode, Mode::Tracing | Mode::Coverage);
    WATCH.store(watch, Relaxed);
    if watch {
        crate::ipc::snapshot::contribute(|snapshot, _last| snapshot.precompiled = images());
    }
}

/// The AOT images mapped into this process whose code the session's filter would have traced,
/// sorted, once each; empty unless [`watch`]ed.
pub fn images() -> Vec<String> {
    if !WATCH.load(Relaxed) {
        return Vec::new();
    }
    let Some(session) = crate::session::get() else { return Vec::new() };
    let framework_too = session.config.filter.may_trace_framework();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut found: Vec<String> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| {
            assembly_of_image(path).is_some_and(|name| framework_too || !sonde_profile::origin::framework_name(name))
        })
        .map(str::to_string)
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// The assembly an AOT image is for, by Mono's naming (`<assembly file>.so`): `mscorlib` for
/// `…/mscorlib.dll.so`; `None` for any other file.
fn assembly_of_image(path: &str) -> Option<&str> {
    let file = path.rsplit('/').next()?.strip_suffix(".so")?;
    let (name, extension) = file.rsplit_once('.')?;
    (extension.eq_ignore_ascii_case("dll") || extension.eq_ignore_ascii_case("exe")).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::assembly_of_image;

    #[test]
    fn images_are_named_after_their_assembly_file() {
        assert_eq!(assembly_of_image("/usr/lib/mono/aot-cache/amd64/mscorlib.dll.so"), Some("mscorlib"));
        assert_eq!(assembly_of_image("/usr/lib/mono/aot-cache/amd64/mcs.exe.so"), Some("mcs"));
        assert_eq!(assembly_of_image("/srv/app/Acme.Core.DLL.so"), Some("Acme.Core"));
        assert_eq!(assembly_of_image("/usr/lib/x86_64-linux-gnu/libc.so.6"), None);
        assert_eq!(assembly_of_image("/usr/lib/libmono-native.so"), None);
        assert_eq!(assembly_of_image("[vdso]"), None);
    }
}
