//! The choices a permission request offers, and what choosing one means. Every door shows
//! these, in order, and sends back the id of the one the person chose; no door builds
//! choices of its own.

use coder_protocol::{PermissionDecision, PermissionOption, PermissionOptionKind};

fn option(
    id: &str,
    kind: PermissionOptionKind,
    key: &str,
    label: String,
    takes_message: bool,
) -> PermissionOption {
    PermissionOption {
        option_id: id.to_owned(),
        kind,
        label,
        key: key.to_owned(),
        takes_message,
        covers: None,
    }
}

/// How long an "always" lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Recorded for the project in the person's own state ([`super::lasting`]).
    Project,
    /// The person has no state file: the rest of this session.
    Session,
}

/// The choices for a call: allow once; allow always when a rule can cover it (`covers`
/// says exactly what it would allow: `None` when a person must answer each time); deny,
/// with a message to the model; deny always (a rule of the project); deny and stop the
/// task.
pub(crate) fn for_call(covers: Option<String>, scope: Scope) -> Vec<PermissionOption> {
    let mut options = vec![option(
        "allow_once",
        PermissionOptionKind::AllowOnce,
        "y",
        "Yes, allow it this once".to_owned(),
        false,
    )];
    let covers = covers.map(|covers| match scope {
        Scope::Project => format!("{covers} in this project"),
        Scope::Session => format!("{covers} for the rest of this session"),
    });
    if let Some(covers) = &covers {
        options.push(PermissionOption {
            covers: Some(covers.clone()),
            ..option(
                "allow_always",
                PermissionOptionKind::AllowAlways,
                "a",
                format!("Yes, and always allow {covers}"),
                false,
            )
        });
    }
    options.push(option(
        "deny",
        PermissionOptionKind::RejectOnce,
        "n",
        "No, and tell the model why".to_owned(),
        true,
    ));
    if let (Some(covers), Scope::Project) = (&covers, scope) {
        options.push(PermissionOption {
            covers: Some(covers.clone()),
            ..option(
                "reject_always",
                PermissionOptionKind::RejectAlways,
                "d",
                format!("No, and always deny {covers}"),
                true,
            )
        });
    }
    options.push(option(
        "refuse",
        PermissionOptionKind::RejectOnce,
        "s",
        "No, and stop the task".to_owned(),
        false,
    ));
    options
}

/// The choices for a plan (`exit_plan_mode`).
pub(crate) fn for_plan() -> Vec<PermissionOption> {
    vec![
        option(
            "start_editing",
            PermissionOptionKind::AllowOnce,
            "y",
            "Yes, carry out the plan".to_owned(),
            false,
        ),
        option(
            "clear_context_and_start",
            PermissionOptionKind::AllowOnce,
            "c",
            "Yes, clear the context and start from the plan".to_owned(),
            false,
        ),
        option(
            "keep_planning",
            PermissionOptionKind::RejectOnce,
            "n",
            "No, keep planning, and tell the model what to change".to_owned(),
            true,
        ),
        option(
            "refuse",
            PermissionOptionKind::RejectOnce,
            "s",
            "No, and stop the task".to_owned(),
            false,
        ),
    ]
}

/// The choices for a question (`ask_user`): each of the model's, keyed `1` to `4`, then an
/// answer in the person's own words, then none.
pub(crate) fn for_question(question: &coder_protocol::Question) -> Vec<PermissionOption> {
    let mut options: Vec<PermissionOption> = question
        .choices
        .iter()
        .enumerate()
        .map(|(at, choice)| {
            option(
                &format!("choice_{}", at + 1),
                PermissionOptionKind::AllowOnce,
                &(at + 1).to_string(),
                choice.label.clone(),
                false,
            )
        })
        .collect();
    options.push(option(
        "own_answer",
        PermissionOptionKind::AllowOnce,
        "o",
        if question.multi_select {
            "Several of these, or something else: say which".to_owned()
        } else {
            "Something else: say what".to_owned()
        },
        true,
    ));
    options.push(option(
        "no_answer",
        PermissionOptionKind::RejectOnce,
        "n",
        "No answer: let the model decide".to_owned(),
        false,
    ));
    options
}

/// What an answer to a question's request means: a choice by its option, the person's own
/// words (none given: no answer), or no answer (also for a denial, and for an option the
/// request did not offer).
pub(crate) fn question_answer(
    offered: &[PermissionOption],
    answer: PermissionDecision,
) -> super::requests::QuestionAnswer {
    use super::requests::QuestionAnswer;
    let PermissionDecision::Option { option_id, message } = answer else {
        return QuestionAnswer::NoAnswer;
    };
    let Some(at) = offered
        .iter()
        .position(|option| option.option_id == option_id)
    else {
        return QuestionAnswer::NoAnswer;
    };
    match option_id.as_str() {
        "own_answer" => match message.map(|text| text.trim().to_owned()) {
            Some(text) if !text.is_empty() => QuestionAnswer::Own(text),
            _ => QuestionAnswer::NoAnswer,
        },
        "no_answer" => QuestionAnswer::NoAnswer,
        _ => QuestionAnswer::Choice(at),
    }
}

/// What an answer means for a request that offered `offered`: an option's id becomes its
/// decision; an id it did not offer is a denial that says so. Other answers are read as
/// they are.
pub(crate) fn decision_of(
    offered: &[PermissionOption],
    answer: PermissionDecision,
) -> PermissionDecision {
    let PermissionDecision::Option { option_id, message } = answer else {
        return answer;
    };
    let chosen = offered.iter().find(|option| option.option_id == option_id);
    let message = message.filter(|_| chosen.is_some_and(|option| option.takes_message));
    match chosen.map(|option| option.option_id.as_str()) {
        Some("allow_once") => PermissionDecision::AllowOnce,
        Some("allow_always") => PermissionDecision::AllowAlways,
        Some("deny") => PermissionDecision::Deny { message },
        Some("reject_always") => PermissionDecision::RejectAlways { message },
        Some("refuse") => PermissionDecision::Refuse,
        Some("start_editing") => PermissionDecision::StartEditing,
        Some("clear_context_and_start") => PermissionDecision::ClearContextAndStart,
        Some("keep_planning") => PermissionDecision::KeepPlanning { message },
        _ => PermissionDecision::malformed(&format!(
            "it named option `{}`, which this request did not offer",
            option_id.chars().take(40).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_id_becomes_its_decision_and_one_not_offered_is_a_denial() {
        let offered = for_call(None, Scope::Session);
        let chosen = |id: &str, message: Option<&str>| {
            decision_of(
                &offered,
                PermissionDecision::Option {
                    option_id: id.to_owned(),
                    message: message.map(str::to_owned),
                },
            )
        };
        assert_eq!(chosen("allow_once", None), PermissionDecision::AllowOnce);
        assert_eq!(
            chosen("deny", Some("use rg")),
            PermissionDecision::Deny {
                message: Some("use rg".to_owned())
            }
        );
        assert_eq!(
            chosen("refuse", Some("ignored")),
            PermissionDecision::Refuse
        );
        // Not offered without a rule to cover the call.
        let PermissionDecision::Deny { message: Some(why) } = chosen("allow_always", None) else {
            panic!("allowed");
        };
        assert!(why.contains("did not offer"), "{why}");
        let keys: Vec<&str> = offered.iter().map(|option| option.key.as_str()).collect();
        assert_eq!(keys, ["y", "n", "s"]);
    }

    #[test]
    fn every_option_set_has_unique_ids_and_keys() {
        for options in [
            for_call(Some("`cargo test`".to_owned()), Scope::Project),
            for_call(Some("`cargo test`".to_owned()), Scope::Session),
            for_call(None, Scope::Project),
            for_plan(),
        ] {
            let mut ids: Vec<&str> = options.iter().map(|o| o.option_id.as_str()).collect();
            let mut keys: Vec<&str> = options.iter().map(|o| o.key.as_str()).collect();
            let count = ids.len();
            ids.sort_unstable();
            ids.dedup();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!((ids.len(), keys.len()), (count, count));
        }
    }
}
