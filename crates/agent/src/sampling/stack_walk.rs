//! The frame-pointer walk of a thread's stack: from an interrupted context in the sampling
//! signal's handler (`signal::handler`, into the thread's ring), or from the calling thread
//! itself at a runtime event (`events`, `async_stacks`). Async-signal-safe: it reads only the
//! thread's own stack, and the code at the leaf's instruction.

use super::ring::FLAG_TRUNCATED;

/// The calling thread's stack, `[low, high)`, as the thread library knows it (for threads whose
/// stack the program allocated itself: exactly what it gave). Not for signal context.
pub fn own_stack() -> Option<(usize, usize)> {
    // SAFETY: pthread_getattr_np fills a local attribute object for the calling thread, which is
    // destroyed after its stack is read.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        let low = addr as usize;
        (ok && size > 0).then(|| (low, low.saturating_add(size)))
    }
}

/// Pushes the return addresses of the stack interrupted at `ip` (stack pointer `sp`, frame
/// pointer `fp`), reading only `[sp, high)`: the frame-pointer chain, except where the code's
/// shape says the return address is elsewhere (`shapes`): a leaf caught in its prologue or
/// epilogue, a frameless method, an on-stack-replacement frame. Each return address read is
/// above the previous one, so the walk ends.
pub(super) fn walk(writer: &mut impl FrameSink, flags: &mut u64, ip: usize, sp: usize, fp: usize, high: usize) {
    walk_from(writer, flags, Some(ip), sp, fp, high);
}

/// Where a walk writes its values.
pub(super) trait FrameSink {
    fn push(&mut self, value: u64);
    fn is_full(&self) -> bool;
}

impl FrameSink for super::ring::Writer<'_> {
    fn push(&mut self, value: u64) {
        super::ring::Writer::push(self, value)
    }
    fn is_full(&self) -> bool {
        super::ring::Writer::is_full(self)
    }
}

/// An event's stack: return addresses moved inside their call (`- 1`), up to a bound, or up to
/// the first value `stop` accepts (kept).
struct EventFrames<'a, F: Fn(u64) -> bool> {
    frames: &'a mut Vec<u64>,
    stop: F,
    stopped: bool,
}

impl<F: Fn(u64) -> bool> FrameSink for EventFrames<'_, F> {
    fn push(&mut self, value: u64) {
        let value = value.saturating_sub(1);
        self.frames.push(value);
        self.stopped = (self.stop)(value);
    }
    fn is_full(&self) -> bool {
        self.stopped || self.frames.len() >= super::ring::MAX_FRAMES
    }
}

/// The calling thread's stack by its frame-pointer chain, from this function's caller out, as
/// return addresses each moved inside its call (`- 1`), innermost first; true when cut at
/// `ring::MAX_FRAMES`. For a runtime's event callback, on the thread the event happened on: the
/// runtime's own frames come first, then the program's (the agent is built with frame pointers,
/// `.cargo/config.toml`; the runtime's native code keeps them too). Reads only the thread's own
/// stack, between here and its top.
#[inline(never)]
pub fn walk_this_thread(frames: &mut Vec<u64>) -> bool {
    walk_this_thread_until(frames, |_| false)
}

/// [`walk_this_thread`], ending after the first frame whose value (as pushed) `stop` accepts:
/// true when it did not end there but at `ring::MAX_FRAMES`.
#[inline(never)]
pub fn walk_this_thread_until(frames: &mut Vec<u64>, stop: impl Fn(u64) -> bool) -> bool {
    thread_local!(static HIGH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
    let high = HIGH.with(|h| {
        if h.get() == 0 {
            h.set(own_stack().map_or(usize::MAX, |(_, high)| high));
        }
        h.get()
    });
    if high == usize::MAX {
        return false;
    }
    let (sp, fp) = frame_registers();
    let mut flags = 0;
    let mut sink = EventFrames { frames, stop, stopped: false };
    walk_from(&mut sink, &mut flags, None, sp, fp, high);
    flags & FLAG_TRUNCATED != 0 && !sink.stopped
}

/// This function's stack and frame pointers (its frame, then its caller's, are on the chain).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn frame_registers() -> (usize, usize) {
    let (sp, fp): (usize, usize);
    // SAFETY: reads two registers, touches nothing.
    unsafe {
        std::arch::asm!("mov {}, rsp", "mov {}, rbp", out(reg) sp, out(reg) fp, options(nomem, nostack, preserves_flags))
    };
    (sp, fp)
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn frame_registers() -> (usize, usize) {
    let (sp, fp): (usize, usize);
    // SAFETY: reads two registers, touches nothing.
    unsafe {
        std::arch::asm!("mov {}, sp", "mov {}, x29", out(reg) sp, out(reg) fp, options(nomem, nostack, preserves_flags))
    };
    (sp, fp)
}

/// [`walk`], from an interrupted instruction `ip` (a leaf, maybe in a prologue) or, with `None`,
/// from a frame whose frame pointer `fp` is set (the current function's).
fn walk_from(writer: &mut impl FrameSink, flags: &mut u64, ip: Option<usize>, sp: usize, fp: usize, high: usize) {
    let read = |at: usize| -> Option<usize> {
        // SAFETY: [at, at + 8) lies in [sp, high): the live part of this thread's stack.
        (at >= sp && at.is_multiple_of(8) && at.checked_add(8)? <= high).then(|| unsafe { *(at as *const usize) })
    };
    walk_with(writer, flags, ip, sp, fp, read, leaf_return_slot);

    /// The leaf's return address slot (relative to the stack pointer) when `ip` is in a prologue
    /// or epilogue: decoded from the code at `ip`, which is mapped (the thread runs it) up to its
    /// page's end.
    fn leaf_return_slot(ip: usize) -> Option<usize> {
        const PAGE: usize = 4096;
        let len = super::shapes::WINDOW.min(PAGE - ip % PAGE);
        // SAFETY: [ip, ip + len) is within the page of the instruction the thread was running.
        let code = unsafe { std::slice::from_raw_parts(ip as *const u8, len) };
        super::shapes::leaf_return_slot(code)
    }
}

/// Where the return address of a leaf interrupted at `ip` is, relative to the stack pointer,
/// when `ip` is in a prologue or epilogue (`shapes::leaf_return_slot`), reading the code without
/// risking a fault: for the drain, long after the sample (the code may be gone by then).
pub(super) fn leaf_slot_of(ip: usize) -> Option<usize> {
    const PAGE: usize = 4096;
    let len = super::shapes::WINDOW.min(PAGE - ip % PAGE);
    let mut code = [0u8; super::shapes::WINDOW];
    let local = libc::iovec { iov_base: code.as_mut_ptr().cast(), iov_len: len };
    let remote = libc::iovec { iov_base: ip as *mut libc::c_void, iov_len: len };
    // SAFETY: writes at most `len` bytes into the local buffer; the kernel reads the remote range
    // and fails cleanly where it is not mapped.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (read == len as isize).then(|| super::shapes::leaf_return_slot(&code[..len])).flatten()
}

/// [`walk`] over a copy of the top of a stack (`stack`, copied from `sp` on: the kernel's
/// sampler), from a leaf at `ip` whose return address slot is `leaf_slot` (from
/// [`leaf_slot_of`]), pushing return addresses into `out`. True when the walk ended inside the
/// copy (the stack's end), false when it needed memory beyond it.
pub(super) fn walk_copy(
    out: &mut Vec<u64>,
    ip: usize,
    sp: usize,
    fp: usize,
    stack: &[u8],
    leaf_slot: Option<usize>,
) -> bool {
    let beyond = std::cell::Cell::new(false);
    let end = sp.saturating_add(stack.len());
    let read = |at: usize| -> Option<usize> {
        if at >= sp && at.checked_add(8).is_some_and(|e| e > end) {
            beyond.set(true);
            return None;
        }
        let offset = at.checked_sub(sp).filter(|_| at.is_multiple_of(8))?;
        Some(usize::from_ne_bytes(stack.get(offset..offset + 8)?.try_into().ok()?))
    };
    let mut flags = 0;
    let mut sink = Copied(out);
    walk_with(&mut sink, &mut flags, Some(ip), sp, fp, read, |_| leaf_slot);
    !beyond.get()
}

/// Return addresses into a vector, up to `ring::MAX_FRAMES`.
struct Copied<'a>(&'a mut Vec<u64>);

impl FrameSink for Copied<'_> {
    fn push(&mut self, value: u64) {
        self.0.push(value);
    }
    fn is_full(&self) -> bool {
        self.0.len() >= super::ring::MAX_FRAMES
    }
}

/// The walk itself, reading the stack through `read` (`None` outside what may be read) and
/// finding a leaf's return address slot with `leaf_slot`.
fn walk_with(
    writer: &mut impl FrameSink,
    flags: &mut u64,
    ip: Option<usize>,
    sp: usize,
    fp: usize,
    read: impl Fn(usize) -> Option<usize>,
    leaf_slot: impl Fn(usize) -> Option<usize>,
) {
    use super::shapes::{SHAPES, Shape};
    // An OSR method's original (tier-0) frame: its return address at `slot`, and its saved RBP,
    // the caller's frame pointer, just below.
    let original_frame = |slot: usize| read(slot.wrapping_sub(8)).map(|saved| (slot, saved));
    let mut leaf = ip.is_some();
    let ip = ip.unwrap_or(0);
    let (mut code_ip, mut frame_sp, mut fp) = (ip, sp, fp);
    loop {
        if writer.is_full() {
            *flags |= FLAG_TRUNCATED;
            return;
        }
        let prologue = if leaf { leaf_slot(ip) } else { None };
        let shape = if code_ip == 0 { None } else { SHAPES.lookup(code_ip) };
        let (slot, next_fp) = match (prologue, shape) {
            (Some(offset), _) => (frame_sp.saturating_add(offset), fp),
            (None, Some(Shape::Frameless(size))) => (frame_sp.saturating_add(size as usize), fp),
            // RBP from the body's stack pointer (`frame_sp`: the interrupted one for the leaf,
            // just above the return address the callee was found by otherwise); the caller's
            // frame pointer is the original frame's saved RBP, just below the return address.
            (None, Some(Shape::Osr { ret, rbp })) => {
                match original_frame(frame_sp.saturating_add(rbp as usize).saturating_add(ret as usize)) {
                    Some(found) => found,
                    None => return,
                }
            }
            // A patchpoint's return address (read at `frame_sp - 8`): where an OSR method
            // entered, its frame on top of the tier-0 frame, and where a walk through the OSR
            // frame's chain (or a callee's) lands. The tier-0 frame's return address — the
            // method's caller — is `offset - 8` above that slot, with its saved RBP just below:
            // the OSR method's frame is laid out from that very slot. (A tier-0 frame still in
            // its patchpoint call reads the same: its return address is there too.)
            (None, Some(Shape::Patchpoint(offset))) => {
                match original_frame(frame_sp.wrapping_sub(8).saturating_add(offset as usize).saturating_sub(8)) {
                    Some(found) => found,
                    None => return,
                }
            }
            (None, None) => match read(fp) {
                Some(next) if fp >= frame_sp => (fp + 8, next),
                _ => return,
            },
        };
        if slot < frame_sp {
            return;
        }
        let Some(ret) = read(slot) else { return };
        if ret == 0 {
            return;
        }
        writer.push(ret as u64);
        leaf = false;
        code_ip = ret - 1;
        frame_sp = slot + 8;
        fp = next_fp;
    }
}
