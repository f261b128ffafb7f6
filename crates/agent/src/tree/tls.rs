//! Initial-exec TLS words declared in assembly: a thread's own 8 bytes, read with two
//! instructions (`mov` from the GOT, `mov` from `fs:`) and safe to touch in a signal handler.
//!
//! A Rust `thread_local!` in a shared library goes through `__tls_get_addr` — a call that costs
//! several ns and, on a thread's first access, allocates (so it must not run in a signal handler,
//! and it may clobber vector registers the hook trampolines must preserve). The price of each word:
//! 8 bytes of the static TLS glibc reserves for `dlopen`ed libraries
//! (`glibc.rtld.optional_static_tls`, 512 bytes by default).

/// Declares the TLS word `$symbol` (a string literal) and, in the invoking module, `get()` and
/// `set(usize)` for the calling thread's copy (0 until set).
#[cfg(target_arch = "x86_64")]
macro_rules! tls_word {
    ($symbol:literal) => {
        core::arch::global_asm!(
            ".pushsection .tbss,\"awT\",@nobits",
            ".p2align 3",
            concat!(".globl ", $symbol),
            concat!(".hidden ", $symbol),
            concat!(".type ", $symbol, ", @object"),
            concat!(".size ", $symbol, ", 8"),
            concat!($symbol, ":"),
            ".zero 8",
            ".popsection",
        );

        #[inline(always)]
        pub fn get() -> usize {
            let value: usize;
            // SAFETY: reads this thread's own 8-byte TLS word through its GOT-held offset.
            unsafe {
                core::arch::asm!(
                    concat!("mov {v}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                    "mov {v}, qword ptr fs:[{v}]",
                    v = out(reg) value,
                    options(nostack, readonly, preserves_flags),
                );
            }
            value
        }

        #[inline(always)]
        pub fn set(value: usize) {
            // SAFETY: writes this thread's own 8-byte TLS word.
            unsafe {
                core::arch::asm!(
                    concat!("mov {t}, qword ptr [rip + ", $symbol, "@GOTTPOFF]"),
                    "mov qword ptr fs:[{t}], {v}",
                    t = out(reg) _,
                    v = in(reg) value,
                    options(nostack, preserves_flags),
                );
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) use tls_word;
