//! Asking a person on a terminal: the options a permission request carries, shown as
//! `[key] label` in their order, and the answer read back by key or id, with a message after
//! it for an option that takes one (typed after the key, or asked for once the key is
//! pressed). The choices are the engine's; nothing here adds one.

use coder_core::control_chars::neutralize;
use coder_protocol::{PermissionDecision, PermissionOption};

/// The question for `options`: `? [y] Yes, allow it this once / [n] No, and tell the model
/// why (n <message>) / ...: `. With `message_after`, the message is asked for once the key
/// is pressed, and the `(n <message>)` hint is left out.
pub(crate) fn prompt(options: &[PermissionOption], message_after: bool) -> String {
    let choices: Vec<String> = options
        .iter()
        .map(|option| {
            let key = neutralize(&option.key);
            let hint = if option.takes_message && !message_after {
                format!(" ({key} <message>)")
            } else {
                String::new()
            };
            format!("[{key}] {}{hint}", neutralize(&option.label))
        })
        .collect();
    format!("? {}: ", choices.join(" / "))
}

/// The keys that answer by themselves: the options' one-letter keys.
pub(crate) fn answer_keys(options: &[PermissionOption]) -> Vec<char> {
    options
        .iter()
        .filter_map(|option| {
            let mut chars = option.key.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_alphanumeric() => Some(c.to_ascii_lowercase()),
                _ => None,
            }
        })
        .collect()
}

/// Whether `decision` chose an option that takes a message and came without one: the
/// person is asked for it.
pub(crate) fn wants_message<'a>(
    options: &'a [PermissionOption],
    decision: &PermissionDecision,
) -> Option<&'a PermissionOption> {
    let PermissionDecision::Option {
        option_id,
        message: None,
    } = decision
    else {
        return None;
    };
    options
        .iter()
        .find(|option| &option.option_id == option_id && option.takes_message)
}

/// What is said after an answer that names no option: the keys there are, in their order,
/// so the person knows what to type (`not an answer: type y, n or a`).
pub(crate) fn hint(options: &[PermissionOption]) -> String {
    let keys: Vec<String> = options
        .iter()
        .map(|option| neutralize(&option.key).into_owned())
        .collect();
    match keys.split_last() {
        Some((last, [])) => format!("not an answer: type {last}"),
        Some((last, rest)) => format!("not an answer: type {} or {last}", rest.join(", ")),
        None => "not an answer".to_owned(),
    }
}

/// The option a typed line names: its key, its id, or the word its key stands for (`yes`,
/// `no`, `always`, `clear`, `stop`), then a message for an option that takes one. `None`
/// when the line names none of them, or gives a message to an option that takes none (the
/// person is asked again).
pub(crate) fn chosen(options: &[PermissionOption], line: &str) -> Option<PermissionDecision> {
    let line = line.trim();
    let (word, message) = match line.split_once(char::is_whitespace) {
        Some((word, message)) => (word, Some(message.trim())),
        None => (line, None),
    };
    let word = word.to_lowercase();
    let key = match word.as_str() {
        "yes" => "y",
        "no" => "n",
        "always" => "a",
        "clear" => "c",
        "stop" => "s",
        other => other,
    };
    let option = options
        .iter()
        .find(|option| option.key == key || option.option_id == word)?;
    let message = message.filter(|message| !message.is_empty());
    if message.is_some() && !option.takes_message {
        return None;
    }
    Some(PermissionDecision::Option {
        option_id: option.option_id.clone(),
        message: message.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::PermissionOptionKind;

    fn options() -> Vec<PermissionOption> {
        let option = |id: &str, key: &str, label: &str, takes_message: bool| PermissionOption {
            option_id: id.to_owned(),
            kind: PermissionOptionKind::AllowOnce,
            label: label.to_owned(),
            key: key.to_owned(),
            takes_message,
            covers: None,
        };
        vec![
            option("allow_once", "y", "Yes", false),
            option("deny", "n", "No", true),
            option("custom", "x", "Something \u{1b}[31mnew", false),
        ]
    }

    #[test]
    fn the_prompt_shows_every_option_it_is_given_and_nothing_else() {
        assert_eq!(
            prompt(&options(), false),
            "? [y] Yes / [n] No (n <message>) / [x] Something ^[[31mnew: "
        );
        assert_eq!(
            prompt(&options(), true),
            "? [y] Yes / [n] No / [x] Something ^[[31mnew: "
        );
        assert_eq!(answer_keys(&options()), ['y', 'n', 'x']);
    }

    #[test]
    fn the_hint_names_every_key_in_order() {
        assert_eq!(hint(&options()), "not an answer: type y, n or x");
        assert_eq!(hint(&options()[..1]), "not an answer: type y");
    }

    #[test]
    fn an_answer_names_an_option_by_key_id_or_word() {
        let chose = |line: &str| chosen(&options(), line);
        let option = |id: &str, message: Option<&str>| {
            Some(PermissionDecision::Option {
                option_id: id.to_owned(),
                message: message.map(str::to_owned),
            })
        };
        assert_eq!(chose("y"), option("allow_once", None));
        assert_eq!(chose("YES"), option("allow_once", None));
        assert_eq!(chose("x"), option("custom", None));
        assert_eq!(
            chose("n use rg instead"),
            option("deny", Some("use rg instead"))
        );
        assert_eq!(chose("deny"), option("deny", None));
        // A key alone for an option that takes a message: the message is asked for.
        let asked = |line: &str| {
            wants_message(&options(), &chose(line).unwrap()).map(|o| o.option_id.clone())
        };
        assert_eq!(asked("n").as_deref(), Some("deny"));
        assert_eq!(asked("n use rg"), None);
        assert_eq!(asked("y"), None);
        // Not offered, or a message where none is taken: asked again.
        assert_eq!(chose("a"), None);
        assert_eq!(chose("y but why"), None);
        assert_eq!(chose(""), None);
    }
}
