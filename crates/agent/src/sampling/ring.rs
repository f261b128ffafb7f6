//! A single-producer single-consumer ring of raw stack samples: the signal handler (on the sampled
//! thread) writes, the drain thread reads. Fixed size, allocated when the thread is registered;
//! the handler never allocates, locks or blocks: when the ring is full the sample is dropped and
//! counted.
//!
//! Record: `[frames << 32 | flags, periods, periods before, work, frame 0 (leaf ip), frame 1
//! (return address), …]`, where "periods before" are intervals the thread spent off the CPU
//! before this sample (charged to its previous stack: see `sampling::drain`) and "work" is the
//! thread's work word when the sample was taken (`sampling::work`: the runtime was compiling a
//! method, collecting garbage).

use std::sync::atomic::{AtomicU64, Ordering::*};

/// Most frames kept per sample; deeper stacks are cut at the root end and flagged.
pub const MAX_FRAMES: usize = 256;
pub const FLAG_TRUNCATED: u64 = 1;
/// A sample's async context (`async_stacks`, below [`MAX_CONTEXT`]) is in its flags (32 bits)
/// from this bit on.
pub const CONTEXT_SHIFT: u32 = 1;
pub const MAX_CONTEXT: u32 = 1 << 31;
const HEADER: usize = 4;

pub struct Ring {
    words: Box<[AtomicU64]>,
    mask: u64,
    /// Written by the producer only.
    head: AtomicU64,
    /// Written by the consumer only.
    tail: AtomicU64,
    pub dropped: AtomicU64,
}

/// A sample being written: frames go straight into the ring, the header last.
pub struct Writer<'a> {
    ring: &'a Ring,
    start: u64,
    frames: u64,
}

impl Ring {
    /// `capacity_words` is rounded up to a power of two, at least enough for one full sample.
    pub fn new(capacity_words: usize) -> Ring {
        let capacity = capacity_words.max(4 * (MAX_FRAMES + HEADER)).next_power_of_two();
        Ring {
            words: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            mask: capacity as u64 - 1,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Starts a sample if a full one fits; `None` (and a dropped count) otherwise.
    #[inline]
    pub fn begin(&self) -> Option<Writer<'_>> {
        let head = self.head.load(Relaxed);
        let tail = self.tail.load(Acquire);
        if (self.mask + 1) - (head - tail) < (MAX_FRAMES + HEADER) as u64 {
            self.dropped.fetch_add(1, Relaxed);
            return None;
        }
        Some(Writer { ring: self, start: head, frames: 0 })
    }

    fn slot(&self, index: u64) -> &AtomicU64 {
        &self.words[(index & self.mask) as usize]
    }

    /// Reads every complete sample, oldest first.
    /// The callback gets `(frames, periods, periods before, flags, work)`.
    pub fn drain(&self, mut sample: impl FnMut(&[u64], u64, u64, u64, u64)) {
        let head = self.head.load(Acquire);
        let mut tail = self.tail.load(Relaxed);
        let mut frames = Vec::with_capacity(MAX_FRAMES);
        while tail < head {
            let header = self.slot(tail).load(Relaxed);
            let periods = self.slot(tail + 1).load(Relaxed);
            let before = self.slot(tail + 2).load(Relaxed);
            let work = self.slot(tail + 3).load(Relaxed);
            let n = (header >> 32).min(MAX_FRAMES as u64);
            frames.clear();
            frames.extend((0..n).map(|i| self.slot(tail + HEADER as u64 + i).load(Relaxed)));
            sample(&frames, periods, before, header & 0xffff_ffff, work);
            tail += HEADER as u64 + n;
        }
        self.tail.store(tail, Release);
    }
}

impl Writer<'_> {
    /// No frame pushed yet.
    pub fn is_empty(&self) -> bool {
        self.frames == 0
    }

    pub fn is_full(&self) -> bool {
        self.frames as usize >= MAX_FRAMES
    }

    #[inline]
    pub fn push(&mut self, frame: u64) {
        if !self.is_full() {
            self.ring.slot(self.start + HEADER as u64 + self.frames).store(frame, Relaxed);
            self.frames += 1;
        }
    }

    /// Publishes the sample: it stands for `periods` intervals, the thread was off the CPU for
    /// `before` intervals since its previous sample, and was doing `work` for the runtime. True
    /// when the ring is now at least half full: time to wake the drain.
    #[must_use]
    pub fn commit(self, periods: u64, before: u64, flags: u64, work: u64) -> bool {
        self.ring.slot(self.start).store((self.frames << 32) | flags, Relaxed);
        self.ring.slot(self.start + 1).store(periods, Relaxed);
        self.ring.slot(self.start + 2).store(before, Relaxed);
        self.ring.slot(self.start + 3).store(work, Relaxed);
        let head = self.start + HEADER as u64 + self.frames;
        self.ring.head.store(head, Release);
        2 * (head - self.ring.tail.load(Relaxed)) > self.ring.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_in_order_and_overflow_is_counted() {
        let ring = Ring::new(0);
        let capacity = ring.mask as usize + 1;
        let mut written = 0;
        while let Some(mut w) = ring.begin() {
            for f in 0..3 {
                w.push(written * 10 + f);
            }
            let half = w.commit(1 + written, written, 0, written * 7);
            written += 1;
            let used = written as usize * (3 + HEADER);
            assert_eq!(half, 2 * used >= capacity, "{used} of {capacity} words used");
        }
        assert!(written as usize >= capacity / (MAX_FRAMES + HEADER));
        assert_eq!(ring.dropped.load(Relaxed), 1);
        let mut seen = Vec::new();
        ring.drain(|frames, periods, before, flags, work| seen.push((frames.to_vec(), periods, before, flags, work)));
        assert_eq!(seen.len() as u64, written);
        assert_eq!(seen[2], (vec![20, 21, 22], 3, 2, 0, 14));
        // Space is reusable after a drain, across the wrap-around.
        for round in 0..3 * written {
            let mut w = ring.begin().expect("space after draining");
            w.push(round);
            let _ = w.commit(1, 0, FLAG_TRUNCATED, 0);
            let mut got = None;
            ring.drain(|frames, _, _, flags, _| got = Some((frames[0], flags)));
            assert_eq!(got, Some((round, FLAG_TRUNCATED)));
        }
    }

    #[test]
    fn a_sample_keeps_at_most_max_frames() {
        let ring = Ring::new(0);
        let mut w = ring.begin().unwrap();
        for f in 0..(MAX_FRAMES as u64 + 10) {
            w.push(f);
        }
        assert!(w.is_full());
        let _ = w.commit(1, 0, FLAG_TRUNCATED, 0);
        ring.drain(|frames, _, _, flags, _| {
            assert_eq!(frames.len(), MAX_FRAMES);
            assert_eq!(flags, FLAG_TRUNCATED);
        });
    }
}
