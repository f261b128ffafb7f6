//! The metadata of the files that sampled methods' modules were loaded from, read once per module
//! on the drain thread — the parts names are made of — to name those methods without asking the
//! runtime (both backends: see `sonde_metadata::tables` for why).

use sonde_metadata::MethodNames;
use sonde_metadata::tables::{Metadata, pe_metadata_range, read_for_names};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Sampled methods named from their module's file, and by the runtime (no readable file).
static FROM_FILE: AtomicU64 = AtomicU64::new(0);
static FROM_RUNTIME: AtomicU64 = AtomicU64::new(0);

/// Counts a sampled method named: from its module's file, or else by the runtime.
pub fn count(from_file: bool) {
    if from_file { &FROM_FILE } else { &FROM_RUNTIME }.fetch_add(1, Relaxed);
}

/// Sampled addresses in images that the runtime was not asked about (CoreCLR: see
/// `coreclr::images`): not code at all, and not known to be safe to ask about yet.
static NOT_CODE: AtomicU64 = AtomicU64::new(0);
static NOT_YET: AtomicU64 = AtomicU64::new(0);

/// Readings of `/proc/self/maps` to tell code from data, and prepared methods whose code was
/// looked up (CoreCLR: `coreclr::images`).
static MAPS_READ: AtomicU64 = AtomicU64::new(0);
static PREPARED_LOOKED_UP: AtomicU64 = AtomicU64::new(0);

/// Counts a reading of `/proc/self/maps`.
pub fn count_maps_read() {
    MAPS_READ.fetch_add(1, Relaxed);
}

/// Counts `n` prepared methods whose code was looked up.
pub fn count_prepared_looked_up(n: usize) {
    PREPARED_LOOKED_UP.fetch_add(n as u64, Relaxed);
}

/// Counts a sampled address the runtime was not asked about: with `not_yet`, for now.
pub fn count_unasked(not_yet: bool) {
    if not_yet { &NOT_YET } else { &NOT_CODE }.fetch_add(1, Relaxed);
}

/// How sampled methods were named so far, for the agent's log.
pub fn summary() -> String {
    format!("names: {} from module files, {} from the runtime", FROM_FILE.load(Relaxed), FROM_RUNTIME.load(Relaxed))
}

/// The sampled addresses the runtime was not asked about so far, for the agent's log (CoreCLR).
pub fn unasked_summary() -> String {
    format!(
        "addresses not asked about: {} not code, {} not known yet ({} readings of the mappings, {} prepared methods looked up)",
        NOT_CODE.load(Relaxed),
        NOT_YET.load(Relaxed),
        MAPS_READ.load(Relaxed),
        PREPARED_LOOKED_UP.load(Relaxed)
    )
}

/// The largest metadata read from a module's file (CoreLib's is ~5 MB).
const MAX_METADATA: usize = 256 << 20;

/// One module's file, read.
pub struct ModuleFile {
    /// The module's file name and path, and its assembly's name.
    module: String,
    path: String,
    assembly: String,
    metadata: Metadata,
}

impl ModuleFile {
    /// Reads the metadata of the module file at `path` (absolute). The assembly's name is
    /// `assembly`, or the file's own Assembly row. `None` for anything but a readable regular file
    /// holding valid metadata.
    pub fn open(path: &str, assembly: Option<String>) -> Option<ModuleFile> {
        use std::os::unix::fs::FileExt;
        if !path.starts_with('/') {
            return None;
        }
        // A regular file only (not a FIFO or a device that would block or never end), checked
        // on the open file. Its content is untrusted input: the reader bounds every access.
        let file = std::fs::File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut read = |offset: u64, buf: &mut [u8]| file.read_exact_at(buf, offset).is_ok();
        let (offset, size) = pe_metadata_range(meta.len(), &mut read).ok()?;
        if size > MAX_METADATA {
            return None;
        }
        // Only what names are made of: about half of it (`read_for_names`).
        let metadata = read_for_names(size, &mut |at, buf| read(offset + at, buf)).ok()?;
        let assembly = assembly.or_else(|| metadata.assembly_name()).unwrap_or_default();
        Some(ModuleFile { module: sonde_metadata::module_file_name(path), path: path.to_string(), assembly, metadata })
    }

    /// [`open`](Self::open), once per file for the process's life: an agent attached again
    /// finds the files it read before (a module's metadata is megabytes — CoreLib's several —
    /// and each session reading it anew left a copy resident in another allocator arena).
    pub fn shared(path: &str, assembly: Option<String>) -> Option<std::sync::Arc<ModuleFile>> {
        type Files = std::collections::HashMap<String, Option<std::sync::Arc<ModuleFile>>>;
        static FILES: std::sync::Mutex<Option<Files>> = std::sync::Mutex::new(None);
        if let Some(known) = FILES.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_default().get(path) {
            return known.clone();
        }
        // Read without the lock (a large file takes a while); a race reads it twice, keeps one.
        let read = ModuleFile::open(path, assembly).map(std::sync::Arc::new);
        let mut files = FILES.lock().unwrap_or_else(|e| e.into_inner());
        files.get_or_insert_default().entry(path.to_string()).or_insert(read).clone()
    }

    /// The name of TypeDef `token` (`Namespace.Outer+Inner`, as the runtime spells it).
    pub fn type_name(&self, token: u32) -> Option<String> {
        use sonde_metadata::TypeNames;
        (token & sonde_metadata::token::KIND_MASK == sonde_metadata::token::TYPE_DEF)
            .then(|| self.metadata.type_name(token))
            .flatten()
    }

    /// The names of MethodDef `token`.
    pub fn method_names(&self, token: u32) -> Option<MethodNames> {
        let (name, signature) = self.metadata.method_name_and_signature(token).ok()?;
        Some(MethodNames {
            name,
            signature,
            assembly: self.assembly.clone(),
            module: self.module.clone(),
            path: self.path.clone(),
            token,
            ..Default::default()
        })
    }
}
