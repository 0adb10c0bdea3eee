//! The machinery of the method table: one macro invocation in [`crate::methods`] lists every
//! `coder lsp` method with its direction, params and result, and everything else is derived
//! from it.
//!
//! From each row the macro makes the method name constant (`CONVERSATION_CREATE`), a marker
//! type implementing [`Request`] or [`Notification`] (which `coder-lsp` registers its
//! handlers through, so a handler whose params or result differ from the table does not
//! compile), an entry of [`TABLE`](crate::methods::TABLE), and a call in
//! [`visit`](crate::methods::visit), which hands each method's Rust types to a
//! [`MethodVisitor`]: `tests/typescript.rs` renders the TypeScript method maps with it and
//! `tests/schema.rs` the JSON Schema (`docs/protocol.schema.json`).
//!
//! The LSP lifecycle (`initialize`, `shutdown`, `exit`, text document sync) and
//! `workspace/applyEdit` are LSP's own and not in the table.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use ts_rs::TS;

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The editor (or any client) calls the server.
    ClientToServer,
    /// The server calls the client.
    ServerToClient,
}

/// One row of the table, as plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo {
    /// The JSON-RPC method name, e.g. `conversation/create`.
    pub name: &'static str,
    /// The name of its constant, e.g. `CONVERSATION_CREATE`.
    pub constant: &'static str,
    pub direction: Direction,
    /// The Rust (and TypeScript) name of the params type.
    pub params: &'static str,
    /// The Rust (and TypeScript) name of the result type; `None` for a notification.
    pub result: Option<&'static str>,
    /// The row's doc comment, one entry per line.
    pub docs: &'static [&'static str],
}

/// What a type on the wire must be: serde both ways, TypeScript and JSON Schema.
pub trait WireType: Serialize + DeserializeOwned + TS + JsonSchema + Send + 'static {}

impl<T: Serialize + DeserializeOwned + TS + JsonSchema + Send + 'static> WireType for T {}

/// A request of the table (answered with a result).
pub trait Request {
    const METHOD: &'static str;
    type Params: WireType;
    type Result: WireType;
}

/// A notification of the table (never answered).
pub trait Notification {
    const METHOD: &'static str;
    type Params: WireType;
}

/// Receives every method of the table with its types, in table order.
pub trait MethodVisitor {
    fn request<M: Request>(&mut self, info: &MethodInfo);
    fn notification<M: Notification>(&mut self, info: &MethodInfo);
}

/// Declares the methods: see the invocation in `methods.rs`.
macro_rules! method_table {
    (
        client_requests {
            $($(#[doc = $c_doc:literal])* $c_ty:ident, $c_const:ident = $c_name:literal:
                $c_params:ident => $c_result:ident;)*
        }
        server_requests {
            $($(#[doc = $s_doc:literal])* $s_ty:ident, $s_const:ident = $s_name:literal:
                $s_params:ident => $s_result:ident;)*
        }
        server_notifications {
            $($(#[doc = $n_doc:literal])* $n_ty:ident, $n_const:ident = $n_name:literal:
                $n_params:ident;)*
        }
    ) => {
        $(
            $(#[doc = $c_doc])*
            pub const $c_const: &str = $c_name;
            #[doc = concat!("The `", $c_name, "` request, client to server.")]
            pub enum $c_ty {}
            impl $crate::table::Request for $c_ty {
                const METHOD: &'static str = $c_const;
                type Params = $c_params;
                type Result = $c_result;
            }
        )*
        $(
            $(#[doc = $s_doc])*
            pub const $s_const: &str = $s_name;
            #[doc = concat!("The `", $s_name, "` request, server to client.")]
            pub enum $s_ty {}
            impl $crate::table::Request for $s_ty {
                const METHOD: &'static str = $s_const;
                type Params = $s_params;
                type Result = $s_result;
            }
        )*
        $(
            $(#[doc = $n_doc])*
            pub const $n_const: &str = $n_name;
            #[doc = concat!("The `", $n_name, "` notification, server to client.")]
            pub enum $n_ty {}
            impl $crate::table::Notification for $n_ty {
                const METHOD: &'static str = $n_const;
                type Params = $n_params;
            }
        )*

        /// Every client-to-server method, as advertised in `initialize`.
        pub const METHODS: &[&str] = &[$($c_const),*];

        /// Every method of the protocol, in the order declared.
        pub const TABLE: &[$crate::table::MethodInfo] = &[
            $($crate::table::MethodInfo {
                name: $c_name,
                constant: stringify!($c_const),
                direction: $crate::table::Direction::ClientToServer,
                params: stringify!($c_params),
                result: Some(stringify!($c_result)),
                docs: &[$($c_doc),*],
            },)*
            $($crate::table::MethodInfo {
                name: $s_name,
                constant: stringify!($s_const),
                direction: $crate::table::Direction::ServerToClient,
                params: stringify!($s_params),
                result: Some(stringify!($s_result)),
                docs: &[$($s_doc),*],
            },)*
            $($crate::table::MethodInfo {
                name: $n_name,
                constant: stringify!($n_const),
                direction: $crate::table::Direction::ServerToClient,
                params: stringify!($n_params),
                result: None,
                docs: &[$($n_doc),*],
            },)*
        ];

        /// Hands every method of [`TABLE`] with its types to `visitor`, in table order.
        pub fn visit(visitor: &mut impl $crate::table::MethodVisitor) {
            let mut rows = TABLE.iter();
            $(if let Some(info) = rows.next() { visitor.request::<$c_ty>(info); })*
            $(if let Some(info) = rows.next() { visitor.request::<$s_ty>(info); })*
            $(if let Some(info) = rows.next() { visitor.notification::<$n_ty>(info); })*
        }
    };
}

pub(crate) use method_table;
