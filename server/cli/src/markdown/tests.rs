use super::Markdown;

/// The lines written while `deltas` stream in, and after the end, without colour.
fn streamed(deltas: &[&str], width: usize) -> (Vec<String>, String) {
    let mut markdown = Markdown::new(false);
    let mut written = Vec::new();
    for delta in deltas {
        let mut out = String::new();
        markdown.push(delta, width, &mut out);
        written.push(out);
    }
    let mut out = String::new();
    markdown.finish(width, &mut out);
    written.push(out);
    let whole = written.concat();
    (written, whole)
}

#[test]
fn a_paragraph_is_written_once_the_next_block_starts() {
    let (written, whole) = streamed(&["Hello **wor", "ld**.\n", "\n", "Next"], 80);
    assert_eq!(written[0], "");
    assert_eq!(written[1], "", "a paragraph may go on after its newline");
    assert_eq!(
        written[2], "",
        "after a blank line, the next line may still be indented"
    );
    assert_eq!(written[3], "Hello **world**.\n");
    assert_eq!(whole, "Hello **world**.\n\nNext\n");
}

#[test]
fn code_lines_are_written_as_they_end() {
    let (written, whole) = streamed(&["Text\n```py\nprint(1)\n", "print(2)\n```\n", "after"], 80);
    assert_eq!(written[0], "Text\n```py\nprint(1)\n");
    assert_eq!(written[1], "print(2)\n```\n");
    assert_eq!(whole, "Text\n```py\nprint(1)\nprint(2)\n```\nafter\n");
}

#[test]
fn a_heading_is_written_when_its_line_ends() {
    let (written, _) = streamed(&["## Plan\n", "text"], 80);
    assert_eq!(written[0], "## Plan\n");
}

#[test]
fn an_indented_line_after_a_blank_one_stays_in_its_list_item() {
    let (_, whole) = streamed(&["1. step\n\n   more about it\n2. next\n"], 80);
    // A blank line inside an item makes the list loose: its items are set apart.
    assert_eq!(whole, "1. step\n\n   more about it\n\n2. next\n");
}

#[test]
fn the_result_does_not_depend_on_how_the_text_is_cut() {
    let source =
        "# T\n\nA *b* c.\n\n- x\n- y\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\nend\n";
    let (_, whole) = streamed(&[source], 30);
    let chars: Vec<String> = source.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    let (_, by_char) = streamed(&refs, 30);
    assert_eq!(by_char, whole);
}

#[test]
fn a_long_table_goes_on_with_its_header_repeated() {
    let mut source = String::from("| n | sq |\n|---|---|\n");
    for n in 0..(super::FORCE_LINES + 10) {
        source.push_str(&format!("| {n} | {} |\n", n * n));
    }
    let (written, whole) = streamed(&[&source], 80);
    assert!(!written[0].is_empty(), "written before the table ends");
    assert_eq!(whole.matches("│ n ").count(), 2, "{whole}");
    assert!(whole.contains(&format!("│ {} ", super::FORCE_LINES + 9)));
}

#[test]
fn the_preview_shows_the_block_being_written() {
    let mut markdown = Markdown::new(false);
    let mut out = String::new();
    markdown.push("a sentence that is being written", 12, &mut out);
    assert_eq!(out, "");
    assert_eq!(markdown.preview(12, 2), vec!["being", "written"]);
    markdown.push("\n```\nlet x", 12, &mut out);
    assert_eq!(markdown.preview(12, 2), vec!["let x"]);
}

/// Whatever a model writes, cut anyhow: no panic, and every line written outside code is
/// within the width (code lines are never broken); what is held back stays one block.
#[test]
fn seeded_hostile_markdown_renders_within_the_width() {
    const PIECES: [&str; 16] = [
        "# ",
        "**",
        "*",
        "`",
        "```",
        "~~~",
        "| a | b |\n|---|:-:|\n",
        "- ",
        "1. ",
        "> ",
        "\n",
        "\n\n",
        "    ",
        "[x](http://y)",
        "word ",
        "你好 ",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300 {
        let width = 10 + (next() % 70) as usize;
        let color = round % 2 == 0;
        let mut markdown = Markdown::new(color);
        let mut out = String::new();
        let mut fenced = false;
        for _ in 0..(next() % 200) {
            let piece = PIECES[(next() % PIECES.len() as u64) as usize];
            let mut delta = String::new();
            for _ in 0..(1 + next() % 3) {
                delta.push_str(piece);
            }
            // Cut anywhere, even inside a character's bytes' neighbours.
            let cut = delta
                .char_indices()
                .nth((next() % 4) as usize)
                .map_or(0, |(at, _)| at);
            markdown.push(&delta[..cut], width, &mut out);
            markdown.push(&delta[cut..], width, &mut out);
            fenced |= piece.starts_with("```") || piece.starts_with("~~~") || piece == "    ";
            let _ = markdown.preview(width, 5);
        }
        markdown.finish(width, &mut out);
        if !fenced {
            for line in out.lines() {
                assert!(
                    super::styled::width(line) <= width,
                    "round {round}, width {width}: {line:?}"
                );
            }
        }
        assert!(markdown.pending.len() < 64 * 1024);
    }
}
