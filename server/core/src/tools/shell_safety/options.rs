//! Sorting a command's arguments into options, option values and operands.

use super::words::Word;

/// Options and operands of a command that accepts options anywhere before `--`.
pub(super) struct Scan<'w, 't> {
    /// The letters of short options, values excluded.
    shorts: String,
    /// Long options without the dashes and without `=value`.
    longs: Vec<String>,
    /// Options with values: the option's letter or long name, and the value.
    values: Vec<(String, Word<'t>)>,
    pub(super) operands: Vec<&'w Word<'t>>,
}

impl<'w, 't> Scan<'w, 't> {
    /// Sorts `args` into options and operands. `short_values` are letters that take a value
    /// (attached or in the next word); `long_values` long options that take one.
    pub(super) fn new(args: &'w [Word<'t>], short_values: &str, long_values: &[&str]) -> Self {
        let mut scan = Scan {
            shorts: String::new(),
            longs: Vec::new(),
            values: Vec::new(),
            operands: Vec::new(),
        };
        let mut index = 0;
        while let Some(word) = args.get(index) {
            index += 1;
            let Some(arg) = word.literal() else {
                scan.operands.push(word);
                continue;
            };
            if arg == "--" {
                scan.operands.extend(&args[index..]);
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                if let Some((name, value)) = long.split_once('=') {
                    scan.values
                        .push((name.to_owned(), Word::synthetic(value, word.node)));
                    scan.longs.push(name.to_owned());
                } else {
                    if long_values.contains(&long)
                        && let Some(value) = args.get(index)
                    {
                        scan.values.push((long.to_owned(), value.clone()));
                        index += 1;
                    }
                    scan.longs.push(long.to_owned());
                }
            } else if let Some(short) = arg.strip_prefix('-')
                && !short.is_empty()
            {
                for (at, letter) in short.char_indices() {
                    if short_values.contains(letter) {
                        let attached = &short[at + letter.len_utf8()..];
                        let value = if attached.is_empty() {
                            index += 1;
                            args.get(index - 1).cloned()
                        } else {
                            Some(Word::synthetic(attached, word.node))
                        };
                        if let Some(value) = value {
                            scan.values.push((letter.to_string(), value));
                        }
                        break;
                    }
                    scan.shorts.push(letter);
                }
            } else {
                scan.operands.push(word);
            }
        }
        scan
    }

    /// Whether the short option `letter` was given (alone or in a cluster such as `-rf`).
    pub(super) fn short(&self, letter: char) -> bool {
        self.shorts.contains(letter)
    }

    /// Whether any of `letters` was given as a short option.
    pub(super) fn any_short(&self, letters: &str) -> bool {
        self.shorts.chars().any(|letter| letters.contains(letter))
    }

    /// Whether any of `names` was given as a long option.
    pub(super) fn any_long(&self, names: &[&str]) -> bool {
        self.longs.iter().any(|long| names.contains(&long.as_str()))
    }

    /// Whether the long option `--name` was given (with or without `=value`).
    pub(super) fn long(&self, name: &str) -> bool {
        self.longs.iter().any(|long| long == name)
    }

    /// The value of an option given by letter or long name.
    pub(super) fn value(&self, names: &[&str]) -> Option<&Word<'t>> {
        self.values
            .iter()
            .find(|(name, _)| names.contains(&name.as_str()))
            .map(|(_, value)| value)
    }

    /// Whether an option was given, by letter or long name, with or without a value.
    pub(super) fn has(&self, letter: char, long: &str) -> bool {
        self.short(letter) || self.long(long) || self.value(&[&letter.to_string(), long]).is_some()
    }
}
