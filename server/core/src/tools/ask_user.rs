//! `ask_user`: the model puts one to four questions to the person, each with two to four
//! choices, when it cannot go on well without their answer. Each question goes through the
//! permission path as a request whose options are its choices (any door shows it), and the
//! answers become the call's result. The turn runs it itself (`turn/questions.rs`); it is
//! offered only to sessions with a person to ask, and calling it outside a session does
//! nothing.

use async_trait::async_trait;
use coder_protocol::{Question, QuestionChoice};
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";

/// The longest header a question may have.
const HEADER_MAX: usize = 12;

/// The `ask_user` tool.
#[derive(Debug, Default)]
pub struct AskUserTool;

#[async_trait]
impl Tool for AskUserTool {
    fn name(&self) -> &str {
        ASK_USER
    }

    fn description(&self) -> &str {
        "Ask the user one to four questions, each with two to four choices, and wait for the \
         answers. Use it when a decision is theirs to make (a library, an approach, a name) \
         or the request is ambiguous in a way that changes the work; not for things you can \
         find out yourself, and not to ask for permission (calls that need it are asked \
         about by themselves). The user may also answer in their own words or not answer."
    }

    fn input_schema(&self) -> Value {
        let choice = json!({
            "type": "object",
            "properties": {
                "label": {"type": "string", "minLength": 1, "description": "What the user picks: 1 to 5 words."},
                "description": {"type": "string", "description": "What picking it means: trade-offs, what happens next."},
            },
            "required": ["label", "description"],
            "additionalProperties": false,
        });
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 4,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "minLength": 1, "description": "The whole question, ending with a question mark."},
                            "header": {"type": "string", "minLength": 1, "maxLength": HEADER_MAX, "description": "A short label for it, at most 12 characters: \"Auth method\"."},
                            "options": {"type": "array", "minItems": 2, "maxItems": 4, "items": choice, "description": "Distinct choices; do not add an \"other\" choice, the user always has one."},
                            "multiSelect": {"type": "boolean", "description": "Whether several choices may be picked together."},
                        },
                        "required": ["question", "header", "options"],
                        "additionalProperties": false,
                    },
                },
            },
            "required": ["questions"],
            "additionalProperties": false,
        })
    }

    fn kind(&self) -> coder_protocol::ToolKind {
        coder_protocol::ToolKind::Other
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn stays_inside_session(&self) -> bool {
        true
    }

    fn questions(&self, input: &Value) -> Option<Vec<Question>> {
        let questions = input["questions"].as_array()?;
        Some(
            questions
                .iter()
                .map(|question| Question {
                    question: text(&question["question"]),
                    header: text(&question["header"]),
                    multi_select: question["multiSelect"].as_bool().unwrap_or(false),
                    choices: question["options"]
                        .as_array()
                        .map(|options| {
                            options
                                .iter()
                                .map(|option| QuestionChoice {
                                    label: text(&option["label"]),
                                    description: text(&option["description"]),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect(),
        )
    }

    fn validate_input(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        for question in self.questions(input).unwrap_or_default() {
            if question.header.chars().count() > HEADER_MAX {
                return Err(format!(
                    "the header `{}` is longer than {HEADER_MAX} characters",
                    question.header
                ));
            }
            let mut labels: Vec<&str> = question.choices.iter().map(|c| c.label.as_str()).collect();
            labels.sort_unstable();
            if labels.windows(2).any(|pair| pair[0] == pair[1]) {
                return Err(format!(
                    "two choices of \"{}\" have the same label",
                    question.question
                ));
            }
        }
        Ok(())
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, String> {
        Err(format!("{ASK_USER} runs only inside a session"))
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
