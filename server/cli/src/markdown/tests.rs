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
