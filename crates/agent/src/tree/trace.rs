//! The call trace (`--call-trace`): a ring of each thread's latest enter and exit events, written
//! by the thread's own hooks and read by snapshots (docs/NATIVE.md, "Call trace").
//!
//! The hot path is four plain stores and no branch beyond the ring's presence. A reader copies
//! the ring while the thread goes on writing, and keeps only the events it is sure were not
//! overwritten while it copied: the writer claims a slot (`claimed`) before it writes it and
//! publishes it (`written`) after, so a reader that copied from `written - size` onwards and then
//! sees `claimed` knows every event from `claimed - size` on is intact.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*, fence};

/// Events per thread, a power of two; 0: no call trace (set once, at the session's start).
static SIZE: AtomicU32 = AtomicU32::new(0);

/// Turns the call trace on, keeping at least `events` per thread (rounded up to a power of two).
/// Returns the size per thread.
pub fn enable(events: u32) -> u32 {
    let size = events.max(2).checked_next_power_of_two().unwrap_or(1 << 31);
    SIZE.store(size, Relaxed);
    size
}

/// Events per thread; 0 when there is no call trace.
pub fn size() -> u32 {
    SIZE.load(Relaxed)
}

/// One thread's ring.
pub struct Ring {
    mask: u64,
    /// Events claimed: the one being written, if any, included.
    claimed: AtomicU64,
    /// Events written.
    written: AtomicU64,
    /// `(tick, method << 32 | depth << 1 | exit)`.
    slots: Box<[[AtomicU64; 2]]>,
}

/// An event as the ring holds it: its tick, method, depth and direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent {
    pub tick: u64,
    pub method: u32,
    pub depth: u32,
    pub exit: bool,
}

impl Ring {
    /// A ring of `size` events (a power of two).
    pub fn new(size: u32) -> Ring {
        let size = size.max(1).next_power_of_two();
        Ring {
            mask: u64::from(size) - 1,
            claimed: AtomicU64::new(0),
            written: AtomicU64::new(0),
            slots: (0..size).map(|_| [AtomicU64::new(0), AtomicU64::new(0)]).collect(),
        }
    }

    /// Appends an event, overwriting the oldest once full. The owning thread's only.
    #[inline(always)]
    pub fn push(&self, tick: u64, method: u32, depth: u32, exit: bool) {
        let i = self.written.load(Relaxed);
        self.claimed.store(i + 1, Relaxed);
        // The claim is visible before any of the slot's new contents.
        fence(Release);
        let slot = &self.slots[(i & self.mask) as usize];
        slot[0].store(tick, Relaxed);
        slot[1].store(u64::from(method) << 32 | u64::from(depth.min(u32::MAX >> 1)) << 1 | u64::from(exit), Relaxed);
        self.written.store(i + 1, Release);
    }

    /// What the ring holds, oldest first, and how many earlier events it overwrote. Any thread.
    pub fn read(&self) -> (u64, Vec<RawEvent>) {
        let end = self.written.load(Acquire);
        let start = end.saturating_sub(self.mask + 1);
        let copied: Vec<(u64, u64)> = (start..end)
            .map(|i| {
                let slot = &self.slots[(i & self.mask) as usize];
                (slot[0].load(Relaxed), slot[1].load(Relaxed))
            })
            .collect();
        // Pairs with `push`'s fence: a slot copied after an overwrite began shows in `claimed`.
        fence(Acquire);
        let intact_from = self.claimed.load(Relaxed).saturating_sub(self.mask + 1).max(start);
        let events = copied[(intact_from - start).min(copied.len() as u64) as usize..]
            .iter()
            .map(|&(tick, word)| RawEvent {
                tick,
                method: (word >> 32) as u32,
                depth: (word as u32) >> 1,
                exit: word & 1 == 1,
            })
            .collect();
        (intact_from.min(end), events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn keeps_the_latest_events() {
        let ring = Ring::new(4);
        for i in 0..6u32 {
            ring.push(u64::from(i) * 10, i, i + 1, i % 2 == 1);
        }
        let (overwritten, events) = ring.read();
        assert_eq!(overwritten, 2);
        let methods: Vec<u32> = events.iter().map(|e| e.method).collect();
        assert_eq!(methods, [2, 3, 4, 5]);
        assert_eq!(events[1], RawEvent { tick: 30, method: 3, depth: 4, exit: true });
    }

    #[test]
    fn a_reader_never_sees_a_torn_or_overwritten_event() {
        // The writer's events are consistent with their index: a reader that returned a slot
        // from another lap would show a mismatch.
        let ring = Arc::new(Ring::new(64));
        let writer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for i in 0..2_000_000u64 {
                    ring.push(i, (i % 1000) as u32, (i % 7) as u32, i.is_multiple_of(2));
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() || reads == 0 {
            let (first, events) = ring.read();
            for (k, e) in events.iter().enumerate() {
                let i = first + k as u64;
                assert_eq!(
                    (e.tick, e.method, e.depth, e.exit),
                    (i, (i % 1000) as u32, (i % 7) as u32, i.is_multiple_of(2))
                );
            }
            reads += 1;
        }
        writer.join().unwrap();
        let (first, events) = ring.read();
        assert_eq!((first, events.len()), (2_000_000 - 64, 64));
    }
}
