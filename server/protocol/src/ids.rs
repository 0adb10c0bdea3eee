//! Identifiers. Both are UUID v7, so they sort by creation time.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[doc = $doc:literal])* $name:ident) => {
        $(#[doc = $doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            JsonSchema,
        )]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        // By hand rather than derived: the derive warns on every build that it cannot read
        // `#[serde(transparent)]` (it renders the right thing anyway). On the wire the id is
        // its UUID, a string.
        impl TS for $name {
            type WithoutGenerics = Self;
            type OptionInnerType = Self;

            fn docs() -> Option<String> {
                let lines: &[&str] = &[$($doc),*];
                let body: String = lines.iter().map(|line| format!(" *{line}\n")).collect();
                Some(format!("/**\n{body} */\n"))
            }

            fn name(_: &ts_rs::Config) -> String {
                stringify!($name).to_owned()
            }

            fn inline(cfg: &ts_rs::Config) -> String {
                <Uuid as TS>::inline(cfg)
            }

            fn decl(cfg: &ts_rs::Config) -> String {
                format!("type {} = {};", Self::name(cfg), Self::inline(cfg))
            }

            fn decl_concrete(cfg: &ts_rs::Config) -> String {
                Self::decl(cfg)
            }

            fn output_path() -> Option<std::path::PathBuf> {
                Some(concat!(stringify!($name), ".ts").into())
            }
        }

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

uuid_id!(
    /// Addresses one conversation inside a session.
    ConversationId
);
uuid_id!(
    /// Addresses one task: the run started by one input, made of one or more turns.
    TaskId
);
uuid_id!(
    /// Names one session: its snapshot is `.coder/sessions/<sessionId>.json`.
    SessionId
);
