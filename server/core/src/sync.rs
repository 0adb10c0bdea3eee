//! Locking without poisoning: a panic while a lock was held must not take the session down
//! with it (each request is isolated), so every mutex of the engine is taken through [`lock`].

use std::sync::{Mutex, MutexGuard};

/// Takes `mutex`, recovering the data if a holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
