//! Why a method's IL was left as it is (`rewrite`: coverage probes, a fault's prologue): reported
//! with the rule it kept from applying (`faults::problem`), else logged.

use sonde_clr::HResult;

#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    /// The body could not be read, edited or encoded (`sonde-il`).
    #[error("{0}")]
    Il(#[from] sonde_il::Error),
    /// The runtime refused a call (`what`: the call, or what it was for).
    #[error("{what}: {error}")]
    Runtime { what: String, error: HResult },
    /// No loaded assembly defines the rule's exception as a prologue can construct it.
    #[error("no loaded assembly defines a public {0} with a public constructor taking no arguments")]
    NoException(String),
    /// The rule named is not (or no longer) among the session's.
    #[error("no such rule")]
    NoRule,
}

impl RewriteError {
    pub fn runtime(what: impl Into<String>) -> impl FnOnce(HResult) -> RewriteError {
        let what = what.into();
        move |error| RewriteError::Runtime { what, error }
    }
}
