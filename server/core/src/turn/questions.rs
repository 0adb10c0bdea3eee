//! An `ask_user` call: each question is put to the person in turn through the permission
//! path (its choices are the request's options), and the answers become the call's result.
//! Questions after one nobody could answer are not asked; an interruption ends the call.

use std::time::Instant;

use coder_protocol::{ChatMessage, Question, ToolCall};
use serde_json::Value;

use super::tool_calls::{CANCELLED_BEFORE_START, ToolRun, finished, person_request};
use crate::permissions::QuestionAnswer;
use crate::tools::Tool;

/// Runs one `ask_user` call, its arguments already checked.
pub(super) async fn ask_user(
    tool: &dyn Tool,
    workspace: &std::path::Path,
    call: &ToolCall,
    input: &Value,
    questions: Vec<Question>,
    run: &ToolRun<'_>,
    started: Instant,
) -> ChatMessage {
    let events = run.events;
    let mut answers = Vec::new();
    for question in &questions {
        if run.control.cancel.is_cancelled() {
            answers.push((question, QuestionAnswer::Cancelled));
            break;
        }
        let summary = format!("{}: {}", question.header, question.question);
        let request = person_request(
            tool,
            call,
            input,
            workspace,
            &summary,
            "the model asks you a question",
        );
        let answer = run
            .tools
            .permissions
            .ask_question(request, question, events, &run.control.cancel)
            .await;
        let stop = matches!(
            answer,
            QuestionAnswer::Unanswered(_) | QuestionAnswer::Cancelled
        );
        answers.push((question, answer));
        if stop {
            break;
        }
    }
    // Interrupted: the task ends, and the answers given before do not matter any more.
    if answers
        .last()
        .is_some_and(|(_, answer)| *answer == QuestionAnswer::Cancelled)
    {
        return finished(
            events,
            tool,
            call,
            CANCELLED_BEFORE_START.to_owned(),
            true,
            started,
        );
    }
    let output = result(&answers, questions.len());
    events.emit(crate::tools::started(tool, &call.id, input, workspace));
    finished(events, tool, call, output, false, started)
}

/// What the model reads: each question with its answer, one line each.
fn result(answers: &[(&Question, QuestionAnswer)], asked: usize) -> String {
    let mut lines = Vec::new();
    for (question, answer) in answers {
        let said = match answer {
            QuestionAnswer::Choice(at) => match question.choices.get(*at) {
                Some(choice) => format!("\"{}\"", choice.label),
                None => "no answer".to_owned(),
            },
            QuestionAnswer::Own(text) => format!("in their own words: \"{text}\""),
            QuestionAnswer::NoAnswer => {
                "no answer (they leave it to you: decide, and say what you chose)".to_owned()
            }
            QuestionAnswer::Unanswered(reason) => {
                format!("not asked: {reason} Decide yourself, and say what you chose.")
            }
            QuestionAnswer::Cancelled => continue,
        };
        lines.push(format!("\"{}\" → {said}", question.question));
    }
    let skipped = asked - answers.len();
    if skipped > 0 {
        lines.push(format!(
            "The {skipped} question(s) after it were not asked."
        ));
    }
    format!("The user's answers:\n{}", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::QuestionChoice;

    fn question(text: &str) -> Question {
        Question {
            question: text.to_owned(),
            header: "Pick".to_owned(),
            multi_select: false,
            choices: vec![
                QuestionChoice {
                    label: "Tokio".to_owned(),
                    description: "async".to_owned(),
                },
                QuestionChoice {
                    label: "Threads".to_owned(),
                    description: "plain".to_owned(),
                },
            ],
        }
    }

    #[test]
    fn the_result_names_each_question_and_its_answer() {
        let (a, b, c) = (
            question("Which runtime?"),
            question("Why?"),
            question("Name?"),
        );
        let answers = [
            (&a, QuestionAnswer::Choice(1)),
            (&b, QuestionAnswer::Own("it is small".to_owned())),
            (&c, QuestionAnswer::NoAnswer),
        ];
        assert_eq!(
            result(&answers, 3),
            "The user's answers:\n\"Which runtime?\" → \"Threads\"\n\"Why?\" → in their own \
             words: \"it is small\"\n\"Name?\" → no answer (they leave it to you: decide, and \
             say what you chose)"
        );
        let answers = [(&a, QuestionAnswer::Unanswered("Nobody is here.".to_owned()))];
        assert_eq!(
            result(&answers, 2),
            "The user's answers:\n\"Which runtime?\" → not asked: Nobody is here. Decide \
             yourself, and say what you chose.\nThe 1 question(s) after it were not asked."
        );
    }
}
