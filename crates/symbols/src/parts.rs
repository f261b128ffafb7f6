//! The parts of a file a parser asks for, read as it asks: an [`object::ReadRef`] that answers
//! from the byte ranges read so far and notes each one it lacked; [`Parts::parse`] runs the
//! parser again with those read, until it lacks nothing.
//!
//! For ELF symbol tables: the headers, the symbol and string tables and a few notes are a small
//! part of a library (glibc's debug file: 0.4 of 4.2 MB; CoreCLR's exports: kilobytes of 7 MB).
//! Reading the whole file cost the profiled process tens of milliseconds of copying at every
//! start; `object`'s own `ReadCache` reads each symbol name with a system call of its own
//! (thousands for a large table). Here a parse takes a few rounds, each lacking the next layer
//! (header, program and section headers, tables, names), and every name of a table comes in
//! one read.

use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// At most this many parses of one file. A well-formed ELF file needs four or five (libc.so.6,
/// its debug file, mono-sgen): the section headers, the symbol tables, notes and section names,
/// the symbols' names; more with several note sections before the build-id's. A round costs a
/// parse of what is held, not a read of the file.
const MAX_ROUNDS: usize = 32;

/// A file, and the byte ranges of it read so far.
pub(crate) struct Parts {
    file: File,
    len: u64,
    /// How many more bytes may be read.
    budget: u64,
    /// Sorted by offset, never overlapping.
    read: Vec<Part>,
    /// What a parse asked for and did not find.
    missing: RefCell<Vec<Range<u64>>>,
}

/// Bytes of the file from `start`, a multiple of 8, held in words: a table's entries are then
/// as aligned in memory as in the file, which `object` requires of the headers and symbols it
/// hands out by reference.
struct Part {
    start: u64,
    words: Vec<u64>,
    len: usize,
}

impl Part {
    fn bytes(&self) -> &[u8] {
        &object::pod::bytes_of_slice(&self.words)[..self.len]
    }

    fn range(&self) -> Range<u64> {
        self.start..self.start + self.len as u64
    }
}

impl Parts {
    /// The regular file at `path`, of which at most `budget` bytes will be read; its first page
    /// is read at once (the ELF header and, nearly always, the program headers).
    pub(crate) fn open(path: &Path, budget: u64) -> std::io::Result<Parts> {
        let file = crate::open_regular(path)?;
        let len = file.metadata()?.len();
        let mut parts = Parts { file, len, budget, read: Vec::new(), missing: RefCell::new(Vec::new()) };
        parts.lack(0..4096);
        parts.read_missing()?;
        Ok(parts)
    }

    /// Runs `parse` over the parts it asks for: again with what it lacked read, until it lacks
    /// nothing (or `MAX_ROUNDS`, or the budget is spent: an error). `parse` returns what it
    /// made of the file, nothing borrowed from it. Parts read stay for the next `parse`.
    pub(crate) fn parse<T>(&mut self, parse: impl Fn(&Parts) -> T) -> std::io::Result<T> {
        for _ in 0..MAX_ROUNDS {
            let made = parse(self);
            if !self.read_missing()? {
                return Ok(made);
            }
        }
        Ok(parse(self))
    }

    /// The part holding `offset`: where it starts, and its bytes.
    fn holding(&self, offset: u64) -> Option<(u64, &[u8])> {
        let at = self.read.partition_point(|part| part.start <= offset).checked_sub(1)?;
        let part = &self.read[at];
        (offset - part.start <= part.len as u64).then_some((part.start, part.bytes()))
    }

    /// Notes a range a parse lacked. The names of one table all end at its end: one range.
    fn lack(&self, range: Range<u64>) {
        let mut missing = self.missing.borrow_mut();
        match missing.last_mut() {
            Some(last) if last.end == range.end => last.start = last.start.min(range.start),
            _ => missing.push(range),
        }
    }

    /// Reads what the last parse lacked (within the file, from a multiple of 8; a part already
    /// held that it overlaps is read again with it, as one). False when there was nothing new
    /// to read.
    fn read_missing(&mut self) -> std::io::Result<bool> {
        let len = self.len;
        let mut wanted: Vec<Range<u64>> = self
            .missing
            .take()
            .into_iter()
            .map(|r| r.start.min(len) & !7..r.end.min(len))
            .filter(|r| !r.is_empty())
            .collect();
        if wanted.is_empty() {
            return Ok(false);
        }
        // Only a part the new ranges overlap is read again with them: one they merely touch (a
        // symbol table, and the string table right after it) stays as it is.
        let overlaps = |a: &Range<u64>, b: &Range<u64>| a.start < b.end && b.start < a.end;
        let mut kept = Vec::with_capacity(self.read.len());
        let mut absorbed = Vec::new();
        for part in self.read.drain(..) {
            let held = part.range();
            if wanted.iter().any(|w| overlaps(w, &held)) {
                absorbed.push(held);
            } else {
                kept.push(part);
            }
        }
        wanted.extend(absorbed);
        wanted.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::new();
        for range in wanted {
            match merged.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => merged.push(range),
            }
        }
        let total: u64 = merged.iter().map(|r| r.end - r.start).sum();
        self.budget = self
            .budget
            .checked_sub(total)
            .ok_or_else(|| std::io::Error::other("larger than any symbol table (256 MiB)"))?;
        for range in merged {
            let len = (range.end - range.start) as usize;
            let mut words = vec![0u64; len.div_ceil(8)];
            self.file.read_exact_at(&mut object::pod::bytes_of_slice_mut(&mut words)[..len], range.start)?;
            kept.push(Part { start: range.start, words, len });
        }
        kept.sort_by_key(|part| part.start);
        self.read = kept;
        Ok(true)
    }
}

impl<'a> object::ReadRef<'a> for &'a Parts {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        let end = offset.checked_add(size).ok_or(())?;
        if end > self.len {
            return Err(());
        }
        if let Some((start, bytes)) = self.holding(offset)
            && end - start <= bytes.len() as u64
        {
            return Ok(&bytes[(offset - start) as usize..(end - start) as usize]);
        }
        self.lack(offset..end);
        Err(())
    }

    /// A string: lacking, the whole of `range` is noted (the rest of a string table), so that
    /// one read brings every name after this one.
    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let end = range.end.min(self.len);
        if range.start >= end {
            return Err(());
        }
        if let Some((start, bytes)) = self.holding(range.start) {
            let held = &bytes[(range.start - start) as usize..];
            let within = &held[..held.len().min((end - range.start) as usize)];
            if let Some(at) = within.iter().position(|&b| b == delimiter) {
                return Ok(&within[..at]);
            }
            if start + bytes.len() as u64 >= end {
                return Err(());
            }
        }
        self.lack(range.start..end);
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::ReadRef;

    fn file_of(bytes: &[u8], budget: u64) -> (tempfile::NamedTempFile, Parts) {
        let mut named = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut named, bytes).unwrap();
        let parts = Parts::open(named.path(), budget).unwrap();
        (named, parts)
    }

    #[test]
    fn a_parse_gets_what_it_asks_for_in_rounds() {
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let (_keep, mut parts) = file_of(&bytes, u64::MAX);
        let rounds = std::cell::Cell::new(0);
        let got = parts
            .parse(|parts| {
                rounds.set(rounds.get() + 1);
                let first = parts.read_bytes_at(10, 4).ok()?.to_vec();
                let far = parts.read_bytes_at(15_000, 100).ok()?.to_vec();
                // Across the first page's end: read again, as one part.
                let across = parts.read_bytes_at(4000, 200).ok()?.to_vec();
                Some((first, far, across))
            })
            .unwrap();
        let (first, far, across) = got.expect("everything read");
        assert_eq!(first, &bytes[10..14]);
        assert_eq!(far, &bytes[15_000..15_100]);
        assert_eq!(across, &bytes[4000..4200]);
        assert_eq!(rounds.get(), 3);
        // What was read stays for the next parse, which needs one round.
        rounds.set(0);
        let again = parts.parse(|parts| {
            rounds.set(rounds.get() + 1);
            parts.read_bytes_at(15_050, 10).map(<[u8]>::to_vec)
        });
        assert_eq!(again.unwrap().unwrap(), &bytes[15_050..15_060]);
        assert_eq!(rounds.get(), 1);
    }

    #[test]
    fn strings_come_in_one_read_and_stop_at_the_range_end() {
        let mut bytes = vec![b'x'; 9000];
        bytes[8000..8006].copy_from_slice(b"hello\0");
        bytes[8500..8504].copy_from_slice(b"abc\0");
        let (_keep, mut parts) = file_of(&bytes, u64::MAX);
        let got = parts
            .parse(|parts| {
                let a = parts.read_bytes_at_until(8500..8999, 0);
                let b = parts.read_bytes_at_until(8000..8999, 0);
                // No delimiter before the range's end: an error, not the bytes after it.
                let c = parts.read_bytes_at_until(8006..8010, 0);
                (a.map(<[u8]>::to_vec), b.map(<[u8]>::to_vec), c.is_err())
            })
            .unwrap();
        assert_eq!(got, (Ok(b"abc".to_vec()), Ok(b"hello".to_vec()), true));
    }

    #[test]
    fn what_lies_beyond_the_file_or_the_budget_is_refused() {
        let bytes = vec![7u8; 10_000];
        let (_keep, mut parts) = file_of(&bytes, u64::MAX);
        let got = parts
            .parse(|parts| (parts.read_bytes_at(9_990, 20).is_err(), parts.read_bytes_at(u64::MAX, 2).is_err()))
            .unwrap();
        assert_eq!(got, (true, true));
        let (_keep, mut parts) = file_of(&bytes, 6000);
        assert!(parts.parse(|parts| parts.read_bytes_at(5000, 5000).is_ok()).is_err());
    }
}
