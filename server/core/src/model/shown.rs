//! What a reply shows while it streams, between the wire format's parser and the task's
//! events.
//!
//! A parser hands over text and thinking as it reads each SSE event; consecutive pieces of
//! one kind are joined until the reader reports them ([`Shown::report`]), which it does
//! before it waits for the body again, before it yields, and when the attempt ends. So
//! nothing is held back waiting for more: a reply that trickles in (a remote model writing
//! a few tokens at a time) is reported piece by piece as before, while a burst (a local
//! server, a reply after a stall, a pre-rendered stream) that one read of the body
//! delivered costs one event instead of one per SSE event. Every door then pays its
//! per-event work (the event hub, a JSON line, an LSP frame, a call into JavaScript) per
//! read, not per token; see docs/benchmarks.md.

use super::StreamUpdate;
use super::template::Piece;

/// A joined piece stops growing once it holds this much; the next piece starts a new one,
/// so no single event grows without bound.
const JOINED_MAX: usize = 64 * 1024;

/// Text, thinking and warnings not yet reported, in order; only the last text or thinking
/// piece grows.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    pending: Vec<StreamUpdate>,
}

impl Shown {
    /// Adds a piece of reply text or thinking, joined to the last one when it is of the
    /// same kind and under its cap.
    pub fn add(&mut self, piece: Piece, text: &str) {
        if text.is_empty() {
            return;
        }
        let last = match (piece, self.pending.last_mut()) {
            (Piece::Text, Some(StreamUpdate::Text(last)))
            | (Piece::Reasoning, Some(StreamUpdate::Reasoning(last))) => Some(last),
            _ => None,
        };
        match last {
            Some(last) if last.len() < JOINED_MAX => last.push_str(text),
            _ => self.pending.push(match piece {
                Piece::Text => StreamUpdate::Text(text.to_owned()),
                Piece::Reasoning => StreamUpdate::Reasoning(text.to_owned()),
            }),
        }
    }

    /// Adds reply text.
    #[cfg(test)]
    pub fn text(&mut self, text: &str) {
        self.add(Piece::Text, text);
    }

    /// Adds thinking.
    #[cfg(test)]
    pub fn reasoning(&mut self, text: &str) {
        self.add(Piece::Reasoning, text);
    }

    /// Adds a warning (it ends the piece before it).
    pub fn warning(&mut self, message: String) {
        self.pending.push(StreamUpdate::Warning(message));
    }

    /// Reports what is pending to `on_update`, in order; returns whether there was text or
    /// thinking among it.
    pub fn report(&mut self, on_update: &mut (dyn FnMut(StreamUpdate) + Send)) -> bool {
        let mut shown = false;
        for update in self.pending.drain(..) {
            shown |= !matches!(
                update,
                StreamUpdate::Warning(_) | StreamUpdate::Retrying { .. }
            );
            on_update(update);
        }
        shown
    }

    /// What is pending, taken (parser tests).
    #[cfg(test)]
    pub fn take(&mut self) -> Vec<StreamUpdate> {
        std::mem::take(&mut self.pending)
    }
}

/// The text and thinking of a reply so far, as a parser accumulates them.
#[derive(Debug, Default)]
pub(crate) struct ReplyText {
    pub text: String,
    pub reasoning: String,
    /// Bytes of text and thinking so far (tool arguments are counted by the parser).
    pub bytes: usize,
}

impl ReplyText {
    /// Adds a piece of the reply and hands it to `shown`.
    pub fn add(&mut self, piece: Piece, text: &str, shown: &mut Shown) {
        if text.is_empty() {
            return;
        }
        self.bytes += text.len();
        match piece {
            Piece::Text => self.text.push_str(text),
            Piece::Reasoning => self.reasoning.push_str(text),
        }
        shown.add(piece, text);
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn consecutive_pieces_of_one_kind_join_and_a_change_of_kind_starts_a_new_one() {
        let mut shown = Shown::default();
        shown.text("Hel");
        shown.text("");
        shown.text("lo");
        shown.reasoning("hmm");
        shown.reasoning(" so");
        shown.text(" you");
        shown.warning("skipped".into());
        shown.text("!");
        assert_eq!(
            shown.take(),
            [
                StreamUpdate::Text("Hello".into()),
                StreamUpdate::Reasoning("hmm so".into()),
                StreamUpdate::Text(" you".into()),
                StreamUpdate::Warning("skipped".into()),
                StreamUpdate::Text("!".into()),
            ]
        );
    }

    #[test]
    fn a_joined_piece_stops_growing_at_its_cap_and_nothing_is_lost() {
        let mut shown = Shown::default();
        let piece = "x".repeat(1000);
        for _ in 0..200 {
            shown.text(&piece);
        }
        let pending = shown.take();
        let sizes: Vec<usize> = pending
            .iter()
            .map(|update| match update {
                StreamUpdate::Text(text) => text.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(sizes.len() > 1, "{sizes:?}");
        assert!(
            sizes.iter().all(|&size| size < JOINED_MAX + 1000),
            "{sizes:?}"
        );
        assert_eq!(sizes.iter().sum::<usize>(), 200_000);
    }

    #[test]
    fn report_hands_everything_over_in_order_and_empties_the_queue() {
        let mut shown = Shown::default();
        shown.warning("retrying".into());
        let mut seen = Vec::new();
        assert!(!shown.report(&mut |update| seen.push(update)));
        shown.reasoning("a");
        shown.text("b");
        assert!(shown.report(&mut |update| seen.push(update)));
        assert!(!shown.report(&mut |update| seen.push(update)));
        assert_eq!(
            seen,
            [
                StreamUpdate::Warning("retrying".into()),
                StreamUpdate::Reasoning("a".into()),
                StreamUpdate::Text("b".into()),
            ]
        );
    }
}
