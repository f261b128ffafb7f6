//! `IUnknown` and `IClassFactory`, as the PAL's `unknwn.h` declares them.
//!
//! The runtime loads a profiler by calling its exported
//! `DllGetClassObject(REFCLSID, REFIID, void **)`, asks for an
//! `IClassFactory`, and calls `CreateInstance` to obtain the callback object.

use core::ffi::c_void;

use crate::types::*;

/// Number of pointer-sized slots in [`IUnknownVtbl`].
pub const IUNKNOWN_SLOTS: usize = 3;
/// Number of pointer-sized slots in [`IClassFactoryVtbl`] (IUnknown + 2).
pub const ICLASS_FACTORY_SLOTS: usize = 5;

#[repr(C)]
pub struct IUnknown {
    pub vtbl: *const IUnknownVtbl,
}

#[repr(C)]
pub struct IUnknownVtbl {
    /// Slot 0.
    pub QueryInterface:
        unsafe extern "system" fn(this: *mut IUnknown, riid: REFIID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IUnknown) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IUnknown) -> ULONG,
}

#[repr(C)]
pub struct IClassFactory {
    pub vtbl: *const IClassFactoryVtbl,
}

#[repr(C)]
pub struct IClassFactoryVtbl {
    /// Slot 0.
    pub QueryInterface:
        unsafe extern "system" fn(this: *mut IClassFactory, riid: REFIID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IClassFactory) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IClassFactory) -> ULONG,
    /// Slot 3.
    pub CreateInstance: unsafe extern "system" fn(
        this: *mut IClassFactory,
        pUnkOuter: *mut IUnknown,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 4.
    pub LockServer: unsafe extern "system" fn(this: *mut IClassFactory, fLock: BOOL) -> HRESULT,
}
