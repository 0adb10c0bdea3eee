//! Where bash evaluates a word as arithmetic, and whether what it evaluates there is inert.
//!
//! Bash evaluates as an arithmetic expression the inside of `$(( ))`, `$[ ]`, `(( ))` and
//! `for (( ))`; the operands of `-eq`, `-ne`, `-lt`, `-le`, `-gt`, `-ge` and the name given
//! to `-v` in `[[ ]]`, `[ ]` and `test`; the subscripts of `${x[...]}` and the offset and
//! length of `${x:off:len}`. In an expression a name's value is evaluated in turn, and an
//! array subscript is expanded before it is evaluated: a `$(...)` or backtick in it runs,
//! even inside quotes (`[[ 'x[$(id)]' -eq 0 ]]` and `echo $(( 'x[$(id)]' ))` run `id`), and
//! so does one in a command's output or a file's content compared as a number (`[[ $(cat
//! n.txt) -gt 3 ]]`). The value of `${!name}` (a reference) and `${name@P}` (a prompt) is
//! evaluated too.
//!
//! [`expression`] is the one place that decides: an expression is inert when it holds only
//! numbers, operators and variables (`n`, `$n`, `${n}`, `$#`, `${#files[@]}`). Quotes other
//! than `"`, backslashes, backticks, `[`, and any other `$` make it unknown, and so the line
//! not read-only (and covered by no approval of its simple commands). A variable's value
//! comes from the person's environment, except for the variables a read-only line can set
//! itself ([`set_by_the_line`], and the variables of its `for` and `select` loops, found
//! before the line is examined): their values may be the line's own text (`true 'x[$(id)]';
//! [[ _ -eq 0 ]]`). An expression that assigns (`x = 1`, `i++`) makes the line one that sets
//! variables.
//!
//! `[` and `test` are builtins that take their operators from their expanded words: an
//! argument that may become several words or name files (`$(cat f)`, `*`, a loop variable
//! unquoted) is unknown, and the arguments next to one whose quoted value may be an operator
//! (`"$(cat f)"` holding `-v`) must be inert too.

use tree_sitter::Node;

use super::Walker;
use super::words::{Word, text};

/// What evaluating an expression does, as far as it can be known before the command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arithmetic {
    /// It runs nothing: the variables whose values it evaluates.
    Inert(Vec<String>),
    /// It assigns a variable (`x = 1`, `i++`), with these variables evaluated.
    Assigns(Vec<String>),
    /// It may run a command, or what it evaluates is not known.
    Unknown,
}

/// The test operators whose operands are evaluated as arithmetic (`-v` evaluates the
/// subscript of the name it is given).
const OPERATORS: [&str; 7] = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"];

/// Assignment operators, longest first.
const ASSIGNMENTS: [&str; 13] = [
    "<<=", ">>=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "++", "--", "=",
];

/// Comparisons that contain `=` without assigning.
const COMPARISONS: [&str; 4] = ["==", "!=", "<=", ">="];

/// Whether `word` is an operator of `test`, `[` or `[[ ]]` whose operands are arithmetic.
fn is_operator(word: &str) -> bool {
    OPERATORS.contains(&word)
}

/// Whether `word` is an operator that takes an operand on each side (`-v` takes one after).
fn is_binary(word: &str) -> bool {
    word != "-v"
}

/// Variables a line the analysis takes for read-only can set to its own text: the last
/// argument of the previous command (`_`), `BASH_REMATCH` (`[[ =~ ]]`), `BASH_COMMAND`, the
/// directory stack, and those of builtins that read input. Loop variables are found in the
/// line.
fn set_by_the_line(name: &str) -> bool {
    const NAMES: [&str; 8] = [
        "_", "PWD", "OLDPWD", "DIRSTACK", "REPLY", "MAPFILE", "OPTARG", "COPROC",
    ];
    NAMES.contains(&name)
        || ["BASH", "COMP_", "READLINE_", "FUNCNAME"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

fn name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The length of the variable name at the start of `text`.
fn name_len(text: &str) -> usize {
    match text.chars().next() {
        Some(c) if name_start(c) => text.find(|c: char| !name_char(c)).unwrap_or(text.len()),
        _ => 0,
    }
}

/// Checks an expression bash evaluates as arithmetic, as written in the source (quotes
/// included). `word` is set for the operand of a test operator, which `[` and `test` also
/// expand as globs, braces and a leading `~`.
fn expression(source: &str, word: bool) -> Arithmetic {
    let mut names = Vec::new();
    let mut assigns = false;
    let mut rest = source;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_whitespace() || c == '"' {
            rest = &rest[1..];
        } else if c.is_ascii_digit() {
            // A number in any base: `0x1f`, `2#101`, `64#@_`.
            let end = rest
                .find(|c: char| !(name_char(c) || c == '#' || c == '@'))
                .unwrap_or(rest.len());
            rest = &rest[end..];
        } else if name_start(c) {
            let end = name_len(rest);
            names.push(rest[..end].to_owned());
            rest = &rest[end..];
        } else if c == '$' {
            let Some((used, name)) = dollar(&rest[1..]) else {
                return Arithmetic::Unknown;
            };
            names.extend(name);
            rest = &rest[1 + used..];
        } else if word && matches!(c, '*' | '?' | '~') {
            return Arithmetic::Unknown;
        } else if "+-*/%<>=!&|^~?:,();".contains(c) {
            if let Some(assignment) = ASSIGNMENTS
                .iter()
                .find(|op| rest.starts_with(**op))
                .filter(|op| !(**op == "=" && COMPARISONS.iter().any(|c| rest.starts_with(c))))
            {
                assigns = true;
                rest = &rest[assignment.len()..];
            } else if let Some(comparison) = COMPARISONS.iter().find(|c| rest.starts_with(**c)) {
                rest = &rest[comparison.len()..];
            } else {
                rest = &rest[c.len_utf8()..];
            }
        } else {
            return Arithmetic::Unknown;
        }
    }
    if assigns {
        Arithmetic::Assigns(names)
    } else {
        Arithmetic::Inert(names)
    }
}

/// What follows a `$` in an expression: how many bytes it takes and the variable whose
/// value it evaluates, if any; `None` for anything but a variable, a special parameter, a
/// length or a nested `$(( ))` (whose inside is checked where it stands).
fn dollar(after: &str) -> Option<(usize, Option<String>)> {
    let first = after.chars().next()?;
    if name_start(first) {
        let end = name_len(after);
        return Some((end, Some(after[..end].to_owned())));
    }
    if first.is_ascii_digit() || matches!(first, '#' | '?' | '$' | '!') {
        return Some((1, None));
    }
    if let Some(inside) = after.strip_prefix("((") {
        return Some((2 + closing(inside, '(', ')', 2)?, None));
    }
    if let Some(inside) = after.strip_prefix('[') {
        return Some((1 + closing(inside, '[', ']', 1)?, None));
    }
    let inside = after.strip_prefix('{')?;
    let end = inside.find('}')?;
    let braced = &inside[..end];
    let used = end + 2;
    // `${#name}`, `${#name[@]}`, `${#}`: a length or a count.
    if let Some(counted) = braced.strip_prefix('#') {
        let len = name_len(counted);
        let tail = &counted[len..];
        return (counted.is_empty() || (len > 0 && matches!(tail, "" | "[@]" | "[*]")))
            .then_some((used, None));
    }
    let len = name_len(braced);
    if len > 0 && len == braced.len() {
        return Some((used, Some(braced.to_owned())));
    }
    (braced.len() == 1
        && braced
            .chars()
            .all(|c| c.is_ascii_digit() || "#?$!".contains(c)))
    .then_some((used, None))
}

/// The length of `text` up to and including the `depth`-th unmatched `close`.
fn closing(text: &str, open: char, close: char, mut depth: usize) -> Option<usize> {
    for (at, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(at + 1);
            }
        }
    }
    None
}

/// What a parameter expansion `${...}` evaluates: its subscript and its offset and length
/// as arithmetic, the value of `${!name}` and `${name@P}`; `Assigns` for `${x=word}` and
/// `${x:=word}`.
fn expansion(source: &str) -> Arithmetic {
    let Some(inside) = source
        .strip_prefix("${")
        .and_then(|inside| inside.strip_suffix('}'))
    else {
        return Arithmetic::Unknown;
    };
    let (indirect, inside) = match inside.strip_prefix('!') {
        Some(rest) if !rest.is_empty() => (true, rest),
        _ => (false, inside.strip_prefix('#').unwrap_or(inside)),
    };
    let len = match name_len(inside) {
        0 => usize::from(!inside.is_empty()),
        len => len,
    };
    let name = &inside[..len];
    let mut rest = &inside[len..];
    let mut names = Vec::new();
    let mut assigns = false;
    let mut subscript = None;
    if let Some(after) = rest.strip_prefix('[') {
        let Some(end) = after.find(']') else {
            return Arithmetic::Unknown;
        };
        subscript = Some(&after[..end]);
        rest = &after[end + 1..];
        if !matches!(&after[..end], "@" | "*")
            && !absorb(expression(&after[..end], false), &mut names, &mut assigns)
        {
            return Arithmetic::Unknown;
        }
    }
    if indirect {
        // `${!prefix*}` and `${!name[@]}` list names and keys; anything else reads the
        // variable the value names, subscript and all.
        let listing = matches!(rest, "*" | "@") || matches!(subscript, Some("@" | "*"));
        if !listing {
            names.push(name.to_owned());
        }
    }
    if rest.starts_with("@P") {
        names.push(name.to_owned());
    }
    if rest.starts_with('=') || rest.starts_with(":=") {
        assigns = true;
    } else if let Some(range) = rest.strip_prefix(':')
        && !range.starts_with(['-', '+', '?'])
        && !absorb(expression(range, false), &mut names, &mut assigns)
    {
        return Arithmetic::Unknown;
    }
    if assigns {
        Arithmetic::Assigns(names)
    } else {
        Arithmetic::Inert(names)
    }
}

/// Adds what an inner expression evaluates to an outer one's; `false` when it is unknown.
fn absorb(verdict: Arithmetic, names: &mut Vec<String>, assigns: &mut bool) -> bool {
    match verdict {
        Arithmetic::Inert(found) => names.extend(found),
        Arithmetic::Assigns(found) => {
            names.extend(found);
            *assigns = true;
        }
        Arithmetic::Unknown => return false,
    }
    true
}

/// The source between the opening `$((`, `$[` or `((` of a node and its closing `))` or
/// `]`.
fn inside<'s>(node: Node<'_>, src: &'s str) -> Option<&'s str> {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let open = children
        .iter()
        .position(|child| matches!(child.kind(), "$((" | "$[" | "(("))?;
    let close = children
        .iter()
        .rposition(|child| matches!(child.kind(), "))" | "]"))
        .filter(|close| *close > open)?;
    src.get(children[open].end_byte()..children[close].start_byte())
}

/// One argument of `test` or `[`: its source and its value when it is literal.
struct Argument {
    source: String,
    literal: Option<String>,
}

/// What an argument of `test` or `[` may expand to, from its source.
#[derive(Default)]
struct Expands {
    /// It may become several words, or names files: an unquoted glob or brace, or an
    /// unquoted value that is not the person's.
    splits: bool,
    /// Its value is not the person's: a command's output, a default value, a variable the
    /// line sets. Quoted, it is still one word, which may be an operator (`-v`).
    untrusted: bool,
}

/// The arguments of `[ ]` parsed as a test command, in order: tree-sitter-bash nests them
/// into expressions, which `[` (a builtin like `test`) does not see.
fn bracket_arguments(node: Node<'_>, src: &str) -> Vec<Argument> {
    const WORDS: [&str; 13] = [
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "translated_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "command_substitution",
        "arithmetic_expansion",
        "process_substitution",
        "number",
        "test_operator",
    ];
    let mut arguments = Vec::new();
    let mut stack = vec![node];
    while let Some(current) = stack.pop() {
        let leaf = current.child_count() == 0 || WORDS.contains(&current.kind());
        if current != node && leaf {
            let source = text(current, src);
            if !matches!(source, "[" | "]") {
                let literal = match current.kind() {
                    "test_operator" => Some(source.to_owned()),
                    _ => Word::from_node(current, src).literal().map(str::to_owned),
                };
                arguments.push(Argument {
                    source: source.to_owned(),
                    literal,
                });
            }
            continue;
        }
        let mut cursor = current.walk();
        let children: Vec<Node<'_>> = current.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    arguments
}

impl Walker {
    /// Whether a variable's value may be the line's own text rather than the person's.
    fn set_here(&self, name: &str) -> bool {
        set_by_the_line(name) || self.loop_variables.iter().any(|known| known == name)
    }

    /// Takes what evaluating an expression does into account.
    fn evaluates(&mut self, verdict: Arithmetic) {
        let names = match verdict {
            Arithmetic::Inert(names) => names,
            Arithmetic::Assigns(names) => {
                self.line_not_read_only();
                names
            }
            Arithmetic::Unknown => {
                self.line_not_read_only();
                return;
            }
        };
        if names.iter().any(|name| self.set_here(name)) {
            self.line_not_read_only();
        }
    }

    /// Remembers the variables of a script's `for` and `select` loops, before it is
    /// examined: their values are the line's own words, wherever they are evaluated.
    pub(super) fn find_loop_variables(&mut self, root: Node<'_>, src: &str) {
        let mut stack = vec![root];
        while let Some(current) = stack.pop() {
            if current.kind() == "for_statement"
                && let Some(variable) = current.child_by_field_name("variable")
            {
                let name = text(variable, src).to_owned();
                if !self.loop_variables.contains(&name) {
                    self.loop_variables.push(name);
                }
            }
            let mut cursor = current.walk();
            stack.extend(current.children(&mut cursor));
        }
    }

    /// The syntax that bash evaluates as arithmetic, wherever it stands: `$(( ))`, `$[ ]`,
    /// `(( ))`, `for (( ))`, `${...}`, and the operands of test operators in `[[ ]]` and
    /// `[ ]`.
    pub(super) fn arithmetic_syntax(&mut self, node: Node<'_>, src: &str) {
        match node.kind() {
            "arithmetic_expansion" | "c_style_for_statement" => {
                let verdict = inside(node, src)
                    .map_or(Arithmetic::Unknown, |inside| expression(inside, false));
                self.evaluates(verdict);
            }
            "compound_statement" if node.child(0).is_some_and(|first| first.kind() == "((") => {
                let verdict = inside(node, src)
                    .map_or(Arithmetic::Unknown, |inside| expression(inside, false));
                self.evaluates(verdict);
            }
            "expansion" => self.evaluates(expansion(text(node, src))),
            "test_command" if node.child(0).is_some_and(|first| first.kind() == "[") => {
                self.test_arguments(&bracket_arguments(node, src));
            }
            "test_command" => self.test_operands(node, src),
            // tree-sitter-bash reads `$((` in a here-document as a command substitution.
            "heredoc_body"
                if ["$((", "$["]
                    .iter()
                    .any(|open| text(node, src).contains(open)) =>
            {
                self.evaluates(Arithmetic::Unknown);
            }
            _ => {}
        }
    }

    /// `[[ ]]`: the operands next to every arithmetic operator in it. Its operators are
    /// fixed when it is parsed, and its words are neither split nor globbed.
    fn test_operands(&mut self, node: Node<'_>, src: &str) {
        let mut stack = vec![node];
        while let Some(current) = stack.pop() {
            if current.kind() == "test_operator" && is_operator(text(current, src)) {
                let mut operands = vec![current.next_named_sibling()];
                if is_binary(text(current, src)) {
                    operands.push(current.prev_named_sibling());
                }
                for operand in operands {
                    let verdict = operand.map_or(Arithmetic::Unknown, |operand| {
                        expression(text(operand, src), true)
                    });
                    self.evaluates(verdict);
                }
            }
            let mut cursor = current.walk();
            stack.extend(current.children(&mut cursor));
        }
    }

    /// `test` and `[` run as commands: the arguments next to every arithmetic operator,
    /// as written (a brace expansion is checked whole).
    pub(super) fn test_command_arguments(&mut self, args: &[Word<'_>], src: &str) {
        let arguments: Vec<Argument> = args
            .iter()
            .map(|word| Argument {
                source: text(word.node, src).to_owned(),
                literal: word.literal().map(str::to_owned),
            })
            .collect();
        self.test_arguments(&arguments);
    }

    /// The arguments of `test` or `[`, whose operators are known only once its words are
    /// expanded: next to a literal arithmetic operator, and next to any argument whose value
    /// may be one (a quoted `"$(cat f)"` holding `-v`), the arguments must be inert; an
    /// argument that may become several words or name files (`$(cat f)`, `*`) is unknown.
    fn test_arguments(&mut self, arguments: &[Argument]) {
        for (at, argument) in arguments.iter().enumerate() {
            let expands = self.expands(&argument.source);
            if expands.splits {
                self.evaluates(Arithmetic::Unknown);
                continue;
            }
            let operator = argument
                .literal
                .as_deref()
                .filter(|literal| is_operator(literal));
            if operator.is_none() && !expands.untrusted {
                continue;
            }
            let mut neighbours = vec![arguments.get(at + 1)];
            if operator.is_none_or(is_binary) {
                neighbours.push(at.checked_sub(1).and_then(|before| arguments.get(before)));
            }
            for neighbour in neighbours.into_iter().flatten() {
                let verdict = match expression(&neighbour.source, true) {
                    // Next to a value that may be an operator, `=` is only a string.
                    Arithmetic::Assigns(names) if operator.is_none() => Arithmetic::Inert(names),
                    verdict => verdict,
                };
                self.evaluates(verdict);
            }
        }
    }

    /// What an argument of `test` or `[` may expand to (see [`Expands`]).
    fn expands(&self, source: &str) -> Expands {
        let mut expands = Expands::default();
        let found = |expands: &mut Expands, untrusted: bool, quoted: bool| {
            if untrusted {
                expands.untrusted = true;
                expands.splits |= !quoted;
            }
        };
        let mut double = false;
        let mut rest = source;
        while let Some(c) = rest.chars().next() {
            let mut used = c.len_utf8();
            match c {
                '\\' => used += rest[1..].chars().next().map_or(0, char::len_utf8),
                '\'' if !double => {
                    used += rest[1..].find('\'').map_or(rest.len() - 1, |end| end + 1)
                }
                '"' => double = !double,
                '`' => found(&mut expands, true, double),
                '*' | '?' | '[' | '{' if !double => expands.splits = true,
                '$' => {
                    let after = &rest[1..];
                    if after.starts_with('\'') && !double {
                        // `$'...'`: quoted like '...'.
                        used += after[1..].find('\'').map_or(after.len(), |end| end + 2);
                    } else if let Some((taken, name)) = dollar(after) {
                        used += taken;
                        found(
                            &mut expands,
                            name.is_some_and(|name| self.set_here(&name)),
                            double,
                        );
                    } else {
                        // `$(...)`, `${x:-...}`, `$@`: a command's output or a value the
                        // analysis does not follow.
                        found(&mut expands, true, double);
                    }
                }
                _ => {}
            }
            rest = rest.get(used..).unwrap_or_default();
        }
        expands
    }
}

#[cfg(test)]
mod tests {
    use super::{Arithmetic, expansion, expression};

    #[test]
    fn expressions() {
        let inert =
            |names: &[&str]| Arithmetic::Inert(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(expression(" 1 + 2 ", false), inert(&[]));
        assert_eq!(expression("0x1f + 2#101 * 64#@_", false), inert(&[]));
        assert_eq!(
            expression("n * $m + ${k} - $# + ${#a[@]}", false),
            inert(&["n", "m", "k"])
        );
        assert_eq!(
            expression("a == b && c != d || e <= 1", false),
            inert(&["a", "b", "c", "d", "e"])
        );
        assert_eq!(expression("$(( 1 + 2 )) + $[3]", false), inert(&[]));
        assert_eq!(expression("\"$n\"", true), inert(&["n"]));
        assert_eq!(
            expression("x = 1", false),
            Arithmetic::Assigns(vec!["x".into()])
        );
        assert_eq!(
            expression("i++", false),
            Arithmetic::Assigns(vec!["i".into()])
        );
        assert_eq!(
            expression("a <<= 1", false),
            Arithmetic::Assigns(vec!["a".into()])
        );
        for unknown in [
            "'x[$(id)]'",
            "x[1]",
            "$(id)",
            "`id`",
            "$'x'",
            "a\\[",
            "${x:-1}",
            "${x[1]}",
            "$@",
            "1.5",
            "${#x[1]}",
        ] {
            assert_eq!(expression(unknown, false), Arithmetic::Unknown, "{unknown}");
        }
        assert_eq!(expression("2*3", false), inert(&[]));
        assert_eq!(expression("a*", true), Arithmetic::Unknown);
        assert_eq!(expression("~x", true), Arithmetic::Unknown);
    }

    #[test]
    fn expansions() {
        let inert =
            |names: &[&str]| Arithmetic::Inert(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(expansion("${x}"), inert(&[]));
        assert_eq!(expansion("${#x}"), inert(&[]));
        assert_eq!(expansion("${a[1]}"), inert(&[]));
        assert_eq!(expansion("${a[i]}"), inert(&["i"]));
        assert_eq!(expansion("${a[@]:1:2}"), inert(&[]));
        assert_eq!(expansion("${x: -1}"), inert(&[]));
        assert_eq!(expansion("${x:-a[$(id)]}"), inert(&[]));
        assert_eq!(expansion("${!x}"), inert(&["x"]));
        assert_eq!(expansion("${!x*}"), inert(&[]));
        assert_eq!(expansion("${!a[@]}"), inert(&[]));
        assert_eq!(expansion("${x@P}"), inert(&["x"]));
        assert_eq!(expansion("${x@Q}"), inert(&[]));
        assert_eq!(expansion("${x:=1}"), Arithmetic::Assigns(Vec::new()));
        assert_eq!(expansion("${x=1}"), Arithmetic::Assigns(Vec::new()));
        assert_eq!(expansion("${a['x[$(id)]']}"), Arithmetic::Unknown);
        assert_eq!(expansion("${x:'x[$(id)]'}"), Arithmetic::Unknown);
        assert_eq!(expansion("${x:$(id)}"), Arithmetic::Unknown);
    }
}
