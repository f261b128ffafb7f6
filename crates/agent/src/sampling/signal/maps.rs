//! A thread's stack when the thread could not say so itself.
//!
//! The signal handler reads stack memory only inside the sampled thread's own stack. Its limits
//! normally come from the thread itself, when it registers ([`crate::sampling::stack_walk::own_stack`]: what
//! the thread library knows, exactly what the program gave for a stack it allocated). A thread
//! registered from another thread has no limits yet; its samples are then the interrupted
//! instruction alone, and the handler notes the stack pointer it saw. The sampler thread turns
//! that into limits here: the one mapping of `/proc/self/maps` that contains the stack pointer —
//! never merged with its neighbours, which may be freed independently of it.

/// The writable private anonymous mapping (or the main thread's `[stack]`) containing `addr`, as
/// `[start, end)`, from the text of `/proc/self/maps`.
pub fn mapping_containing(maps: &str, addr: usize) -> Option<(usize, usize)> {
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (range, perms) = (fields.next()?, fields.next()?);
        let path = fields.nth(3).unwrap_or("");
        if !perms.starts_with("rw") || !perms.ends_with('p') || !(path.is_empty() || path == "[stack]") {
            return None;
        }
        let (start, end) = range.split_once('-')?;
        let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        (start <= addr && addr < end).then_some((start, end))
    })
}

/// [`mapping_containing`] on this process's current mappings. Not for signal context.
pub fn stack_containing(addr: usize) -> Option<(usize, usize)> {
    let text = std::fs::read_to_string("/proc/self/maps").ok()?;
    mapping_containing(&text, addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_one_anonymous_writable_mapping_never_its_neighbours() {
        let maps = "\
55d0c0000000-55d0c0021000 r-xp 00000000 08:01 123 /usr/bin/dotnet
7f0000000000-7f0000001000 ---p 00000000 00:00 0
7f0000001000-7f0000801000 rw-p 00000000 00:00 0
7f0000801000-7f0000802000 rw-p 00000000 00:00 0
7f0000900000-7f0000901000 rw-p 00000000 08:01 99 /usr/lib/libc.so.6
7f0000a00000-7f0000a01000 rw-s 00000000 00:05 7 /dev/zero (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";
        assert_eq!(mapping_containing(maps, 0x7f0000400000), Some((0x7f0000001000, 0x7f0000801000)));
        assert_eq!(mapping_containing(maps, 0x7f0000801800), Some((0x7f0000801000, 0x7f0000802000)));
        assert_eq!(mapping_containing(maps, 0x7f0000000800), None); // guard page
        assert_eq!(mapping_containing(maps, 0x7f0000900800), None); // file-backed
        assert_eq!(mapping_containing(maps, 0x7f0000a00800), None); // shared
        assert_eq!(mapping_containing(maps, 0x7ffd00020fff), Some((0x7ffd00000000, 0x7ffd00021000)));
        assert_eq!(mapping_containing(maps, 0x7ffd00021000), None);
        assert_eq!(mapping_containing(maps, 0), None);
    }

    #[test]
    fn this_threads_stack_is_found() {
        let local = 0u64;
        let addr = std::ptr::from_ref(&local) as usize;
        let (start, end) = stack_containing(addr).expect("a test thread's stack is an anonymous mapping");
        assert!(start <= addr && addr < end);
    }
}
