//! The permission system: modes, presets, rules, and requests to a person.
//!
//! For every call that passed validation, [`Permissions::check`] decides allow, ask or deny
//! from the conversation's mode, the session's preset and configured rules, and (for `bash`)
//! the dangerous-command analysis. Asks become `permission_requested` events answered through
//! [`crate::Engine::respond_permission`].

mod matrix;
mod requests;

pub use matrix::{CommandRule, MatrixRow, PermissionRules};
pub(crate) use matrix::{ReadOnly, check, describe};
pub(crate) use requests::{Answer, Permissions, PlanAnswer, Request, SESSION_ENDED};
