//! The kernel's `perf_event` interface, as the samplers use it: the raw ABI (the attribute
//! layout, the `ioctl` numbers, the ring's control page and record layout, from
//! `<linux/perf_event.h>`) declared here and nowhere else, with a safe wrapper above it.
//!
//! Two users: `signal::timers` (a task-clock event whose overflow raises the sampling signal on
//! its thread) and `kernel` (the same event writing each sample into a ring the drain reads: no
//! signal at all).

use std::sync::atomic::{AtomicU64, Ordering::*};

// <linux/perf_event.h>
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `PERF_ATTR_SIZE_VER5`: up to `sample_max_stack` (Linux 4.8).
const ATTR_SIZE: u32 = 112;
pub const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_EVENT_IOC_REFRESH: libc::c_ulong = 0x2402;

pub const SAMPLE_READ: u64 = 1 << 4;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;

pub const RECORD_LOST: u32 = 2;
pub const RECORD_SAMPLE: u32 = 9;
/// Call-chain entries at or above this are context markers (`PERF_CONTEXT_USER`, …), not
/// addresses.
pub const CONTEXT_MAX: u64 = -4095i64 as u64;

/// The registers a sample carries (`sample_regs_user`), in this order: x86-64's
/// `PERF_REG_X86_BP`, `_SP`, `_IP`; arm64's `PERF_REG_ARM64_X29`, `_SP`, `_PC`.
#[cfg(target_arch = "x86_64")]
pub const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
#[cfg(target_arch = "aarch64")]
pub const REGS_MASK: u64 = (1 << 29) | (1 << 31) | (1 << 32);

/// `struct perf_event_attr` up to [`ATTR_SIZE`].
#[repr(C)]
#[derive(Default)]
pub struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
    bp_len: u64,
    branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    pub sample_max_stack: u16,
    reserved: u16,
}
const _: () = assert!(std::mem::size_of::<Attr>() == ATTR_SIZE as usize);

impl Attr {
    /// A thread's CPU time in user mode (`exclude_kernel`: `perf_event_paranoid` up to 2 allows
    /// it on a process's own threads without privileges; the count is still the thread's whole
    /// CPU time, only overflows in the kernel are skipped), one overflow every `period_ns`.
    pub fn task_clock(period_ns: u64) -> Attr {
        Attr {
            kind: PERF_TYPE_SOFTWARE,
            size: ATTR_SIZE,
            config: PERF_COUNT_SW_TASK_CLOCK,
            sample_period: period_ns.max(1),
            flags: ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV | ATTR_EXCLUDE_CALLCHAIN_KERNEL,
            ..Attr::default()
        }
    }
}

/// An open event (closed on drop).
pub struct Event(libc::c_int);

impl Event {
    /// Opens `attr` on thread `tid`, any CPU. `None` when the kernel refuses (no
    /// `perf_event_open` under this seccomp policy, `perf_event_paranoid` 3, out of descriptors).
    pub fn open(attr: &Attr, tid: u32) -> Option<Event> {
        // SAFETY: perf_event_open(2) reads `attr` (ATTR_SIZE bytes, all initialised) and returns
        // a new descriptor or -1; pid = tid, any CPU, no group.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr as *const Attr,
                tid as libc::pid_t,
                -1,
                -1,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        (fd >= 0).then_some(Event(fd as libc::c_int))
    }

    pub fn fd(&self) -> libc::c_int {
        self.0
    }

    /// Gives the descriptor up (see [`Event::from_raw`]).
    pub fn into_raw(self) -> libc::c_int {
        let fd = self.0;
        std::mem::forget(self);
        fd
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: closes our own descriptor, once.
        unsafe { libc::close(self.0) };
    }
}

/// Opens an event that never counts, on a short-lived thread of its own, and closes it: returns
/// at once. The first per-thread event opened after none was open for a second has the kernel
/// switch its scheduler hook for them on and wait for a grace period before `perf_event_open`
/// returns (5–20 ms measured here; BENCHMARKS.md, "Start-up, continued"), and the hook stays on
/// for a second after the last one closes. Done first thing, that wait starts beside the agent's
/// checks and handshake (about a millisecond before the sampler's first event, which otherwise
/// waits all of it on the thread that starts the runtime); what is left of it still falls there.
pub fn warm_up() {
    let _ = crate::base::running::spawn_thread("sonde-warm-up", || {
        let mut attr = Attr::task_clock(1_000_000);
        attr.flags |= ATTR_DISABLED;
        drop(Event::open(&attr, crate::tree::threads::gettid()));
    });
}

/// Arms event `fd` for `overflows` more overflows. Async-signal-safe.
pub fn refresh(fd: libc::c_int, overflows: libc::c_int) {
    // SAFETY: an ioctl on an event descriptor of ours.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, overflows) };
}

/// Stops event `fd` counting and sampling. Async-signal-safe.
pub fn disable(fd: libc::c_int) {
    // SAFETY: an ioctl on an event descriptor of ours.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) };
}

/// The byte offsets of `data_head` and `data_tail` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const PAGE: usize = 4096;

/// An event's ring, mapped: the control page, then `2^n` data pages the kernel writes records
/// into. The kernel only writes; we read between our tail and its head, then move the tail.
pub struct Ring {
    base: *mut u8,
    /// Data bytes (a power of two).
    size: usize,
}

// SAFETY: the mapping is shared memory; the kernel and one reader at a time (the drain, under its
// lock) touch it, through atomics for the head and tail.
unsafe impl Send for Ring {}
unsafe impl Sync for Ring {}

impl Ring {
    /// Maps `data_pages` (a power of two) of ring for event `fd`. `None` when the kernel
    /// refuses (past `perf_event_mlock_kb` and `RLIMIT_MEMLOCK`: the caller tries fewer pages).
    pub fn map(fd: libc::c_int, data_pages: usize) -> Option<Ring> {
        let len = (data_pages + 1) * PAGE;
        // SAFETY: maps an event's ring read-write (the tail is ours to write), shared; checked.
        let base = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        (base != libc::MAP_FAILED).then(|| Ring { base: base.cast(), size: data_pages * PAGE })
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: the control page is mapped for the ring's life; both offsets are 8-aligned
        // fields of it.
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }

    /// How many bytes the kernel has written so far (its head; never goes back). The thread
    /// the event samples may read it at any time: a sample the kernel wrote while the thread
    /// ran is below the value it reads afterwards.
    #[inline]
    pub fn head(&self) -> u64 {
        self.word(DATA_HEAD).load(Acquire)
    }

    /// Reads every complete record, oldest first, then frees their space: the callback gets each
    /// record's position (bytes written before it), its type and its body (after the header).
    /// One reader at a time.
    pub fn read(&self, scratch: &mut Vec<u8>, mut record: impl FnMut(u64, u32, &[u8])) -> usize {
        let head = self.head();
        let mut tail = self.word(DATA_TAIL).load(Relaxed);
        let start = tail;
        // SAFETY: the data pages follow the control page and stay mapped for the ring's life.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(PAGE), self.size) };
        let mask = self.size as u64 - 1;
        while tail + 8 <= head {
            let at = (tail & mask) as usize;
            let header: [u8; 8] = copy(data, at, 8).try_into().unwrap_or([0; 8]);
            let kind = u32::from_ne_bytes(header[0..4].try_into().unwrap_or_default());
            let len = u16::from_ne_bytes(header[6..8].try_into().unwrap_or_default()) as u64;
            if len < 8 || tail + len > head {
                break;
            }
            let body_at = ((tail + 8) & mask) as usize;
            let body_len = len as usize - 8;
            if body_at + body_len <= self.size {
                record(tail, kind, &data[body_at..body_at + body_len]);
            } else {
                scratch.clear();
                scratch.extend_from_slice(&copy(data, body_at, body_len));
                record(tail, kind, scratch);
            }
            tail += len;
        }
        self.word(DATA_TAIL).store(tail, Release);
        (tail - start) as usize
    }
}

/// `len` bytes of the ring's data from `at`, across the wrap-around.
fn copy(data: &[u8], at: usize, len: usize) -> Vec<u8> {
    let first = len.min(data.len() - at);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&data[at..at + first]);
    out.extend_from_slice(&data[..len - first]);
    out
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping `map` made, once.
        unsafe { libc::munmap(self.base.cast(), self.size + PAGE) };
    }
}

/// The kernel's bound on the frames of a call chain (`kernel.perf_event_max_stack`, 127 unless
/// raised).
pub fn max_stack() -> u16 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|s| s.trim().parse::<u16>().ok())
        .unwrap_or(127)
}

/// A sample record's fields for the sample type `kernel` asks for: `READ` (the count), then
/// `CALLCHAIN`, `REGS_USER` ([`REGS_MASK`]) and `STACK_USER`.
pub struct Sample<'a> {
    /// The event's count: the thread's CPU time in nanoseconds.
    pub count: u64,
    /// The call chain, markers included.
    pub chain: &'a [u8],
    /// Frame pointer, stack pointer, instruction pointer (none for a thread without user
    /// registers).
    pub regs: Option<[u64; 3]>,
    /// The top of the user stack from the stack pointer, as copied.
    pub stack: &'a [u8],
}

impl<'a> Sample<'a> {
    /// Parses a sample record's body (`None` if it is shorter than its fields say).
    pub fn parse(body: &'a [u8]) -> Option<Sample<'a>> {
        let mut at = 0;
        let mut next = |n: usize| -> Option<&'a [u8]> {
            let field = body.get(at..at + n)?;
            at += n;
            Some(field)
        };
        let u64_at = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or_default());
        let count = u64_at(next(8)?);
        let nr = u64_at(next(8)?) as usize;
        let chain = next(nr.checked_mul(8)?)?;
        let abi = u64_at(next(8)?);
        let regs = if abi == 0 {
            None
        } else {
            let r = next(24)?;
            Some([u64_at(&r[0..8]), u64_at(&r[8..16]), u64_at(&r[16..24])])
        };
        let size = u64_at(next(8)?) as usize;
        let stack = if size == 0 {
            &[][..]
        } else {
            let data = next(size)?;
            let dynamic = u64_at(next(8)?) as usize;
            &data[..dynamic.min(size)]
        };
        Some(Sample { count, chain, regs, stack })
    }

    /// The call chain's addresses, innermost first (markers left out).
    pub fn frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.chain
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default()))
            .filter(|&v| v < CONTEXT_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(values: &[u64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    #[test]
    fn a_sample_record_parses_in_field_order() {
        let user = -512i64 as u64;
        let mut body = words(&[12_345, 4, user, 0x1000, 0x2000, 0x3000, 2, 0xb0, 0x5a, 0x1000, 16]);
        body.extend_from_slice(&[7u8; 16]);
        body.extend(words(&[12]));
        let sample = Sample::parse(&body).expect("parses");
        assert_eq!(sample.count, 12_345);
        assert_eq!(sample.frames().collect::<Vec<_>>(), vec![0x1000, 0x2000, 0x3000]);
        assert_eq!(sample.regs, Some([0xb0, 0x5a, 0x1000]));
        assert_eq!(sample.stack, &[7u8; 12][..]);
        assert!(Sample::parse(&body[..body.len() - 9]).is_none(), "a short record is refused");
    }

    #[test]
    fn a_sample_without_user_registers_has_no_stack() {
        let body = words(&[5, 0, 0, 0]);
        let sample = Sample::parse(&body).expect("parses");
        assert_eq!((sample.regs, sample.stack.len(), sample.frames().count()), (None, 0, 0));
    }

    /// The kernel really writes what `kernel` asks for: a task-clock event on this thread,
    /// a busy loop, and at least one sample whose chain starts at an address of this test.
    #[test]
    fn the_kernel_writes_samples_of_a_busy_thread() {
        let tid = crate::tree::threads::gettid();
        let mut attr = Attr::task_clock(100_000);
        attr.sample_type = SAMPLE_READ | SAMPLE_CALLCHAIN | SAMPLE_REGS_USER | SAMPLE_STACK_USER;
        attr.sample_regs_user = REGS_MASK;
        attr.sample_stack_user = 256;
        attr.sample_max_stack = max_stack();
        let Some(event) = Event::open(&attr, tid) else {
            panic!("perf_event_open refused on this machine (perf_event_paranoid?)");
        };
        let ring = Ring::map(event.fd(), 4).expect("the ring maps");
        // 5 ms of this thread's own CPU time, however busy the machine.
        let cpu = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: writes a local timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let until = cpu() + 5_000_000;
        let mut x = 0u64;
        while cpu() < until {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        }
        let mut samples = 0;
        let mut last_count = 0;
        ring.read(&mut Vec::new(), |_, kind, body| {
            if kind == RECORD_SAMPLE {
                let sample = Sample::parse(body).expect("a sample parses");
                assert!(sample.count >= last_count, "the count only grows");
                last_count = sample.count;
                assert!(sample.regs.is_some() && !sample.stack.is_empty() && sample.frames().count() > 1);
                samples += 1;
            }
        });
        assert!(samples > 10, "{samples} samples in 5 ms of CPU time at 10 kHz");
        assert!(last_count >= 1_000_000, "{last_count} ns counted");
    }
}
