use super::render;

/// `source` rendered without colour, as one string of lines.
fn plain(source: &str, width: usize) -> String {
    render(source, width, false).join("\n")
}

#[test]
fn a_paragraph_is_wrapped_at_word_boundaries() {
    let text = plain("one two three four five six seven eight nine ten", 20);
    assert_eq!(text, "one two three four\nfive six seven eight\nnine ten");
}

#[test]
fn without_colour_the_markers_keep_the_meaning() {
    let text = plain(
        "# Title\n\nSome *italic*, **bold**, ~~gone~~ and `code`; a [link](https://x.dev).",
        80,
    );
    assert_eq!(
        text,
        "# Title\n\nSome *italic*, **bold**, ~~gone~~ and `code`; a link (https://x.dev)."
    );
}

#[test]
fn with_colour_the_markers_become_styles() {
    let lines = render("Some *italic*, **bold**, ~~gone~~ and `code`.", 80, true);
    let line = &lines[0];
    assert!(
        !line.contains('*') && !line.contains('`') && !line.contains("~~"),
        "{line:?}"
    );
    for style in ["\x1b[0;3m", "\x1b[0;1m", "\x1b[0;9m", "\x1b[0;36m"] {
        assert!(line.contains(style), "{style:?} missing in {line:?}");
    }
}

#[test]
fn lists_are_bulleted_numbered_nested_and_wrapped_under_their_text() {
    let text = plain(
        "- first item that is long enough to wrap\n  - nested\n- [x] done\n\n3. three\n4. four",
        24,
    );
    assert_eq!(
        text,
        "• first item that is\n  long enough to wrap\n  • nested\n• [x] done\n\n3. three\n4. four"
    );
}

#[test]
fn a_quote_keeps_its_mark_on_every_wrapped_line() {
    let text = plain("> a quoted sentence that wraps", 16);
    assert_eq!(text, "> a quoted\n> sentence that\n> wraps");
}

#[test]
fn a_table_lines_up_its_columns_and_fits_the_width() {
    let source = "| name | size |\n|:-----|-----:|\n| a | 1 |\n| longer name | 200 |\n";
    let text = plain(source, 80);
    assert_eq!(
        text,
        "┌─────────────┬──────┐\n\
         │ name        │ size │\n\
         ├─────────────┼──────┤\n\
         │ a           │    1 │\n\
         │ longer name │  200 │\n\
         └─────────────┴──────┘"
    );
    let narrow = render(
        "| a | b |\n|---|---|\n| a long cell that must wrap | another long cell here |\n",
        30,
        true,
    );
    assert!(
        narrow.iter().all(|line| super::styled::width(line) <= 30),
        "{narrow:#?}"
    );
    assert!(
        narrow.len() > 5,
        "the cells wrap onto several lines: {narrow:#?}"
    );
}

#[test]
fn code_keeps_its_lines_and_without_colour_its_fences() {
    let source = "```rust\nfn main() {\n    let long_line_that_is_not_wrapped = 1;\n}\n```";
    assert_eq!(
        plain(source, 20),
        "```rust\nfn main() {\n    let long_line_that_is_not_wrapped = 1;\n}\n```"
    );
    let coloured = render(source, 20, true);
    assert_eq!(coloured.len(), 3, "no fences with colour: {coloured:#?}");
    assert!(
        coloured[0].contains("\x1b[0;"),
        "highlighted: {coloured:#?}"
    );
}

#[test]
fn a_link_whose_text_is_its_address_is_not_repeated() {
    assert_eq!(plain("<https://x.dev>", 80), "https://x.dev");
    assert_eq!(plain("[https://x.dev](https://x.dev)", 80), "https://x.dev");
}

#[test]
fn wide_characters_are_counted_by_their_columns() {
    let text = render("你好 世界 你好 世界", 10, false);
    assert!(
        text.iter().all(|line| super::styled::width(line) <= 10),
        "{text:?}"
    );
}
