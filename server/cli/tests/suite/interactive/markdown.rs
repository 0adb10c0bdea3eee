//! The answer's Markdown as a person reads it at the terminal: wrapped at word boundaries
//! to the terminal's width, tables lined up, code highlighted, inline styles shown as
//! styles (or, under `NO_COLOR`, as their markers), at 60, 80 and 200 columns; the block
//! being written shown while it streams.

use coder_testkit::{Chunk, MockModelServer, MockResponse};

use super::Screen;
use super::screen::env;
use super::session::Place;

/// Words of different lengths, none a part of another, so a word cut by the terminal's own
/// wrapping would show as a piece that is not one of them.
fn paragraph() -> Vec<String> {
    (0..60)
        .map(|n| format!("w{n}{}", "x".repeat(n % 7)))
        .collect()
}

fn answer() -> String {
    format!(
        "# Report\n\n{}\n\nThis is *leaning*, ~~struck~~ and [the docs](https://docs.example/x).\n\n\
         | file | lines |\n|:-----|------:|\n| main.rs | 12 |\n| a_much_longer_name.rs | 3400 |\n\n\
         ```rust\nfn main() {{\n    println!(\"hi\");\n}}\n```\n\nDone.\n",
        paragraph().join(" ")
    )
}

/// The answer in pieces of 7 characters (cut inside words, markers and table rows).
fn pieces(text: &str) -> Vec<Chunk> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(7)
        .map(|piece| Chunk::text(&piece.iter().collect::<String>()))
        .collect()
}

fn streamed(text: &str) -> MockResponse {
    MockResponse::stream(pieces(text))
}

fn start(place: &Place, server: &MockModelServer, cols: u16, extra: &[(&str, String)]) -> Screen {
    let mut env = env(place.home.path(), server);
    env.extend(extra.iter().cloned());
    Screen::start_sized(place.workspace.path(), &[], &env, cols)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_wrapped_laid_out_and_styled_at_60_80_and_200_columns() {
    for cols in [60u16, 80, 200] {
        let server = MockModelServer::start(vec![streamed(&answer())])
            .await
            .unwrap();
        let place = Place::new();
        let mut screen = start(&place, &server, cols, &[]);
        screen.prompt(1);
        screen.line("report");
        screen.wait_for("── done");
        let text = screen.prompt(2);
        let words = paragraph();
        // Every line of the paragraph holds whole words, and no line is wider than the
        // terminal allows (one column is kept free).
        let rows: Vec<&str> = text
            .lines()
            .filter(|line| {
                line.starts_with("w") && line.chars().nth(1).is_some_and(|c| c.is_ascii_digit())
            })
            .collect();
        assert!(
            rows.len() > 1,
            "{cols} columns: the paragraph wraps:\n{text}"
        );
        for row in &rows {
            assert!(row.chars().count() < usize::from(cols), "{cols}: {row:?}");
            for word in row.split(' ') {
                assert!(
                    words.iter().any(|w| w == word),
                    "{cols}: {word:?} cut in {row:?}"
                );
            }
        }
        assert_eq!(rows.join(" "), words.join(" "), "{cols} columns");
        // The table's rows line up: the same width, the bars in the same columns.
        let table: Vec<&str> = text.lines().filter(|line| line.starts_with('│')).collect();
        assert_eq!(table.len(), 3, "{text}");
        let bars = |line: &str| -> Vec<usize> {
            line.chars()
                .enumerate()
                .filter(|(_, c)| *c == '│')
                .map(|(at, _)| at)
                .collect()
        };
        assert!(
            table.iter().all(|row| bars(row) == bars(table[0])),
            "{text}"
        );
        assert!(
            table[2].contains("│ a_much_longer_name.rs │  3400 │"),
            "{text}"
        );
        // Styles, not markers.
        for marker in ["**", "~~", "```", "](", "# Report"] {
            assert!(
                !text.contains(marker),
                "{cols}: {marker:?} shown raw:\n{text}"
            );
        }
        assert!(
            text.replace('\n', " ")
                .contains("the docs (https://docs.example/x)"),
            "{text}"
        );
        let style = |needle: &str| screen.style_of(needle).unwrap();
        assert!(style("Report").bold, "the heading is bold");
        assert!(style("leaning").italic, "emphasis is italic");
        assert!(style("fn main").colored, "code is highlighted");
        assert!(style("the docs").underline, "a link is underlined");
        screen.send("\x04");
        assert!(screen.exit().success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_colour_the_structure_stays_and_no_style_is_written() {
    let mut chunks = pieces(&answer());
    chunks.insert(0, Chunk::thinking("weighing the report"));
    let server = MockModelServer::start(vec![MockResponse::stream(chunks)])
        .await
        .unwrap();
    let place = Place::new();
    let mut screen = start(&place, &server, 80, &[("NO_COLOR", "1".to_owned())]);
    screen.prompt(1);
    screen.line("report");
    screen.wait_for("── done");
    let text = screen.prompt(2);
    for kept in [
        "✻ thinking\n┊ weighing the report\n\n# Report",
        "This is *leaning*, ~~struck~~ and the docs (https://docs.example/x).",
        "│ a_much_longer_name.rs │  3400 │",
        "```rust",
        "fn main() {",
    ] {
        assert!(text.contains(kept), "{kept:?} missing:\n{text}");
    }
    assert!(
        !screen.raw().contains("\x1b[0;"),
        "a style was written under NO_COLOR"
    );
    screen.send("\x04");
    assert!(screen.exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paragraph_shows_while_it_is_written_and_stays_once_done() {
    let server = MockModelServer::start(vec![
        MockResponse::stream(vec![
            Chunk::text("The first words arrive "),
            Chunk::text("and more follow "),
            Chunk::text("slowly.\n\nSecond."),
        ])
        .with_delay(1_500),
    ])
    .await
    .unwrap();
    let place = Place::new();
    let mut screen = place.start(&server, &[]);
    screen.prompt(1);
    screen.line("go");
    // Shown before the paragraph is complete (what completes it comes 3 s later).
    let text = screen.wait_for("The first words arrive");
    assert!(!text.contains("Second."), "{text}");
    let text = screen.wait_for("── done");
    assert_eq!(
        text.matches("The first words arrive and more follow slowly.")
            .count(),
        1,
        "{text}"
    );
    assert!(text.contains("slowly.\n\nSecond.\n── done"), "{text}");
    screen.send("\x04");
    assert!(screen.exit().success());
}
