//! Whether to colour what goes to stderr or stdout: only on a terminal, and never when `NO_COLOR` is
//! set to a non-empty value (<https://no-color.org>).

use std::io::IsTerminal;

/// True when stderr is a terminal and `NO_COLOR` is unset or empty.
pub fn stderr_wants_color() -> bool {
    std::io::stderr().is_terminal() && !no_color(std::env::var_os("NO_COLOR").as_deref())
}

/// True when stdout is a terminal and `NO_COLOR` is unset or empty.
pub fn stdout_wants_color() -> bool {
    std::io::stdout().is_terminal() && !no_color(std::env::var_os("NO_COLOR").as_deref())
}

fn no_color(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_non_empty_no_color_turns_colour_off() {
        assert!(!no_color(None));
        assert!(!no_color(Some("".as_ref())));
        assert!(no_color(Some("1".as_ref())));
        assert!(no_color(Some("0".as_ref())));
    }
}
