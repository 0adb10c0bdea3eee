//! One shared copy of what equal tasks send besides their history.

use std::sync::{Arc, Mutex};

use crate::model::ToolSpec;
use crate::sync::lock;

/// What a conversation's last task sent besides its history: the system prompt and tools.
#[derive(Debug)]
pub(crate) struct PromptShape {
    pub system: String,
    pub tools: Vec<ToolSpec>,
}

/// Hands out one shared [`PromptShape`] for equal prompts: conversations whose tasks send the
/// same system prompt and tools (the usual case) hold one copy between them, not one each
/// (tens of kilobytes a conversation once the tool schemas are counted).
#[derive(Default)]
pub(crate) struct PromptShapes {
    last: Mutex<Option<Arc<PromptShape>>>,
}

impl PromptShapes {
    pub fn share(&self, system: &str, tools: &[ToolSpec]) -> Arc<PromptShape> {
        let mut last = lock(&self.last);
        if let Some(shape) = last
            .as_ref()
            .filter(|shape| shape.system == system && shape.tools.as_slice() == tools)
        {
            return shape.clone();
        }
        let shape = Arc::new(PromptShape {
            system: system.to_owned(),
            tools: tools.to_vec(),
        });
        *last = Some(shape.clone());
        shape
    }
}
