//! The permission system: modes, presets, rules, and requests to a person.
//!
//! For every call that passed validation, [`Permissions::check`] decides allow, ask or deny
//! from the conversation's mode, the session's preset and configured rules, and (for `bash`)
//! the dangerous-command analysis. Asks become `permission_requested` events answered through
//! [`crate::Engine::respond_permission`], or are answered without a person as
//! [`Unattended`] says when the session approves by itself.

mod lasting;
mod matrix;
mod options;
mod requests;
mod unattended;

pub(crate) use lasting::LastingRules;
pub(crate) use matrix::{Call, check, describe};
pub use matrix::{CommandRule, MatrixRow, PermissionRules};
pub(crate) use requests::{
    Answer, Permissions, PlanAnswer, QuestionAnswer, Request, SESSION_ENDED, folder_of,
};
pub(crate) use unattended::{Unattended, Unconfined};
