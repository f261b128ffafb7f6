use sonde_clr_sys::HRESULT;

/// A failed HRESULT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HResult(pub HRESULT);

impl HResult {
    /// `Ok(())` for success codes (S_OK, S_FALSE), the code otherwise.
    pub fn check(hr: HRESULT) -> Result<(), HResult> {
        if hr >= 0 { Ok(()) } else { Err(HResult(hr)) }
    }
}

impl std::fmt::Display for HResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HRESULT 0x{:08X}", self.0 as u32)
    }
}

impl std::error::Error for HResult {}
