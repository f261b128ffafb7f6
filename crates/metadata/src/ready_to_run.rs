//! Where the precompiled code of a ReadyToRun image lies: its `RUNTIME_FUNCTIONS` table (every
//! method body and funclet, as `[begin, end)` RVAs, sorted), read from the image as the runtime
//! laid it out in memory (each section at its RVA).
//!
//! The sampler needs it to keep bogus addresses away from the runtime: CoreCLR's lookup of an
//! address in a ReadyToRun image (`ReadyToRunJitManager::JitCodeToMethodInfo`, behind
//! `GetFunctionFromIP`) walks the table backwards from the address's entry until it meets a
//! method the runtime has already prepared, and runs off the table's start — a fault — when none
//! precedes it. An address that lies in no runtime function (the image's headers, its metadata,
//! padding) is never code.
//!
//! The format: the CLI header (data directory 14) names the ReadyToRun header
//! (`ManagedNativeHeader`); that header (`RTR`) lists sections by type, and section 102 is the
//! runtime functions, 12 bytes each on x64 and arm64 (`BeginAddress`, `EndAddress`,
//! `UnwindData`). Layout from the runtime's `readytorun.h`.

use crate::tables::{Unreadable, pe_headers, u32_at};

type Result<T> = std::result::Result<T, Unreadable>;

/// `READYTORUN_SIGNATURE`: "RTR".
const SIGNATURE: u32 = 0x0052_5452;
/// `ReadyToRunSectionType::RuntimeFunctions`.
const RUNTIME_FUNCTIONS: u32 = 102;
const FUNCTION_SIZE: usize = 12;
/// More runtime functions than any image holds (System.Private.CoreLib has ~40,000): a bound on
/// what a damaged header can make us read.
const MAX_FUNCTIONS: usize = 1 << 22;

/// The runtime functions of one ReadyToRun image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeMap {
    /// `(begin, end)` RVAs, sorted by `begin`.
    functions: Vec<(u32, u32)>,
    size_of_image: u32,
}

impl CodeMap {
    /// Reads the code map of the image whose bytes at RVA `rva` `read(rva, buf)` fills (as
    /// mapped: sections at their RVAs). `Ok(None)` for a PE image without ReadyToRun code (an
    /// IL-only assembly); an error for anything that is not a well-formed PE image.
    pub fn read(read: &mut dyn FnMut(u32, &mut [u8]) -> bool) -> Result<Option<CodeMap>> {
        let mut head = [0u8; 1024];
        if !read(0, &mut head) {
            return Err(Unreadable("cannot read the image's headers"));
        }
        let (optional, directories) = pe_headers(&head)?;
        // NumberOfRvaAndSizes: the word before the directories.
        let count_at = directories - 4;
        let size_of_image = u32_at(&head, optional + 56)?;
        if u32_at(&head, count_at)? <= 14 {
            return Ok(None);
        }
        let cli_rva = u32_at(&head, directories + 14 * 8)?;
        if cli_rva == 0 {
            return Ok(None);
        }
        let mut cli = [0u8; 72];
        if !read(cli_rva, &mut cli) {
            return Err(Unreadable("cannot read the CLI header"));
        }
        let native_rva = u32_at(&cli, 64)?;
        if native_rva == 0 {
            return Ok(None);
        }
        let mut header = [0u8; 16];
        if !read(native_rva, &mut header) || u32_at(&header, 0)? != SIGNATURE {
            return Ok(None);
        }
        let sections = (u32_at(&header, 12)? as usize).min(256);
        let mut table = vec![0u8; sections * 12];
        if !read(native_rva + 16, &mut table) {
            return Err(Unreadable("cannot read the ReadyToRun sections"));
        }
        let Some((rva, size)) = (0..sections)
            .map(|i| (u32_at(&table, i * 12), u32_at(&table, i * 12 + 4), u32_at(&table, i * 12 + 8)))
            .find_map(|(kind, rva, size)| (kind.ok()? == RUNTIME_FUNCTIONS).then_some((rva.ok()?, size.ok()?)))
        else {
            return Ok(None);
        };
        let count = size as usize / FUNCTION_SIZE;
        if count > MAX_FUNCTIONS {
            return Err(Unreadable("a runtime function table larger than any image's"));
        }
        let mut bytes = vec![0u8; count * FUNCTION_SIZE];
        if !read(rva, &mut bytes) {
            return Err(Unreadable("cannot read the runtime functions"));
        }
        let functions = bytes
            .chunks_exact(FUNCTION_SIZE)
            .map(|f| (u32::from_le_bytes([f[0], f[1], f[2], f[3]]), u32::from_le_bytes([f[4], f[5], f[6], f[7]])))
            .collect();
        // Sorted in every image the runtime accepts (it binary-searches them); sorted here
        // whatever the bytes say, so a search never misses.
        Ok(Some(CodeMap::new(functions, size_of_image)))
    }

    /// A code map of `(begin, end)` runtime functions (in any order) in an image of
    /// `size_of_image` bytes.
    pub fn new(mut functions: Vec<(u32, u32)>, size_of_image: u32) -> CodeMap {
        functions.retain(|&(begin, end)| begin < end && end <= size_of_image);
        functions.sort_unstable();
        CodeMap { functions, size_of_image }
    }

    /// The image's size as mapped (`SizeOfImage`).
    pub fn size_of_image(&self) -> u32 {
        self.size_of_image
    }

    /// The number of runtime functions.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// Whether `rva` lies inside the code of a runtime function (a method body or a funclet).
    pub fn is_code(&self, rva: u32) -> bool {
        let at = self.functions.partition_point(|&(begin, _)| begin <= rva);
        at > 0 && rva < self.functions[at - 1].1
    }

    /// The RVA of the first runtime function, where the image's code starts.
    pub fn first_code(&self) -> Option<u32> {
        self.functions.first().map(|&(begin, _)| begin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::u16_at;

    /// A mapped PE32+ image of 64 KB: headers, a CLI header at 0x2000 naming a ReadyToRun header
    /// at 0x2100 (one section list entry besides the runtime functions), runtime functions at
    /// 0x3000 (given unsorted, as a damaged image could).
    fn image(functions: &[(u32, u32)], native_header: bool) -> Vec<u8> {
        let mut image = vec![0u8; 0x10000];
        let put = |image: &mut Vec<u8>, at: usize, value: u32| image[at..at + 4].copy_from_slice(&value.to_le_bytes());
        image[..2].copy_from_slice(b"MZ");
        put(&mut image, 0x3c, 0x80);
        put(&mut image, 0x80, 0x4550);
        let optional = 0x80 + 24;
        image[optional..optional + 2].copy_from_slice(&0x20bu16.to_le_bytes());
        put(&mut image, optional + 56, 0x10000);
        put(&mut image, optional + 108, 16);
        put(&mut image, optional + 112 + 14 * 8, 0x2000);
        if native_header {
            put(&mut image, 0x2000 + 64, 0x2100);
        }
        put(&mut image, 0x2100, SIGNATURE);
        put(&mut image, 0x2100 + 12, 2);
        for (i, (kind, rva, size)) in
            [(100, 0x4000, 8), (RUNTIME_FUNCTIONS, 0x3000, functions.len() as u32 * 12)].into_iter().enumerate()
        {
            let at = 0x2110 + i * 12;
            put(&mut image, at, kind);
            put(&mut image, at + 4, rva);
            put(&mut image, at + 8, size);
        }
        for (i, &(begin, end)) in functions.iter().enumerate() {
            put(&mut image, 0x3000 + i * 12, begin);
            put(&mut image, 0x3000 + i * 12 + 4, end);
        }
        image
    }

    fn read(image: &[u8]) -> Result<Option<CodeMap>> {
        CodeMap::read(&mut |rva, buf| match image.get(rva as usize..rva as usize + buf.len()) {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                true
            }
            None => false,
        })
    }

    #[test]
    fn code_is_inside_a_runtime_function_and_nothing_else_is() {
        let map = read(&image(&[(0x5100, 0x5180), (0x5000, 0x5040), (0x5180, 0x5200)], true)).unwrap().unwrap();
        assert_eq!(map.len(), 3);
        assert_eq!(map.size_of_image(), 0x10000);
        assert_eq!(map.first_code(), Some(0x5000));
        for rva in [0x5000, 0x503f, 0x5100, 0x517f, 0x5180, 0x51ff] {
            assert!(map.is_code(rva), "{rva:#x}");
        }
        // Headers, the gap between two functions, after the last one, the metadata.
        for rva in [0, 0x10, 0x4fff, 0x5040, 0x50ff, 0x5200, 0x9000] {
            assert!(!map.is_code(rva), "{rva:#x}");
        }
    }

    #[test]
    fn an_image_without_ready_to_run_code_has_no_map() {
        assert_eq!(read(&image(&[(0x5000, 0x5040)], false)).unwrap(), None);
        let mut no_signature = image(&[(0x5000, 0x5040)], true);
        no_signature[0x2100] = 0;
        assert_eq!(read(&no_signature).unwrap(), None);
    }

    #[test]
    fn damaged_images_are_errors_or_bounded() {
        assert!(read(&[0u8; 16]).is_err());
        let mut not_pe = image(&[], true);
        not_pe[0] = b'X';
        assert!(read(&not_pe).is_err());
        // Functions beyond the image and empty ones are dropped.
        let map = read(&image(&[(0x5000, 0x4000), (0x5000, 0x20000), (0x6000, 0x6010)], true)).unwrap().unwrap();
        assert_eq!(map.len(), 1);
        assert!(map.is_code(0x6008) && !map.is_code(0x5008));
    }

    #[test]
    fn a_real_ready_to_run_image_is_mostly_code_after_its_headers() {
        // Any R2R framework assembly, laid out as the runtime maps it (sections at their RVAs),
        // from the file: the test assembles the mapped layout from the section table.
        let Some(runtime) = std::env::var_os("SONDE_DOTNET") else {
            panic!("SONDE_DOTNET is not set: source target/sonde-env.sh (scripts/setup.sh)");
        };
        let dir = std::path::Path::new(&runtime).parent().unwrap().join("shared/Microsoft.NETCore.App");
        let version =
            std::fs::read_dir(&dir).unwrap().flatten().find(|e| e.path().join("System.Console.dll").is_file());
        let path = version.expect("a .NET runtime with System.Console.dll").path().join("System.Console.dll");
        let file = std::fs::read(&path).unwrap();
        let mapped = map_sections(&file);
        let map = read(&mapped).unwrap().expect("System.Console.dll is ReadyToRun code");
        assert!(map.len() > 100, "{} runtime functions", map.len());
        let first = map.first_code().unwrap();
        assert!(map.is_code(first) && !map.is_code(0) && !map.is_code(first - 1));
    }

    /// A PE file laid out as mapped: each section's raw bytes at its RVA.
    fn map_sections(file: &[u8]) -> Vec<u8> {
        let pe = u32_at(file, 0x3c).unwrap() as usize;
        let size = u32_at(file, pe + 24 + 56).unwrap() as usize;
        let mut image = vec![0u8; size];
        let headers = u32_at(file, pe + 24 + 60).unwrap() as usize;
        image[..headers].copy_from_slice(&file[..headers]);
        let sections = u16_at(file, pe + 6).unwrap() as usize;
        let table = pe + 24 + u16_at(file, pe + 20).unwrap() as usize;
        for i in 0..sections {
            let s = table + i * 40;
            let (rva, raw_size, raw) = (
                u32_at(file, s + 12).unwrap() as usize,
                u32_at(file, s + 16).unwrap() as usize,
                u32_at(file, s + 20).unwrap() as usize,
            );
            let len = raw_size.min(size - rva).min(file.len() - raw);
            image[rva..rva + len].copy_from_slice(&file[raw..raw + len]);
        }
        image
    }
}
