//! The interactive terminal (`coder` alone), driven through a pseudo-terminal as a person
//! would drive it: keys typed, Ctrl+C as the terminal delivers it (SIGINT to the
//! foreground process group), the screen read back through a terminal emulator and
//! compared as text snapshots (`snapshots/`, reviewed with `cargo insta review` or
//! rewritten with `INSTA_UPDATE=always`).

mod completion;
mod keys;
mod markdown;
mod minor;
mod own_files;
mod paste;
mod questions;
mod sandbox_escape;
mod screen;
pub mod session;
mod status;
mod told;
mod typing;
mod workflow;

pub use screen::Screen;
