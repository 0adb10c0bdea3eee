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
                // `--name=$X/...`: an option whose value is not literal.
                if let Some((name, value)) = word.long_option() {
                    scan.values.push((name.clone(), value));
                    scan.longs.push(name);
                } else {
                    scan.operands.push(word);
                }
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
                    if long_values.iter().any(|full| abbreviates(long, full))
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

    /// Whether any of `names` was given as a long option, spelled out or abbreviated.
    pub(super) fn any_long(&self, names: &[&str]) -> bool {
        names.iter().any(|name| self.long(name))
    }

    /// Whether the long option `--name` was given (with or without `=value`), spelled out or
    /// abbreviated: GNU programs accept any unambiguous prefix (`--out` for `--output`), and
    /// an ambiguous one counts too, to be safe.
    pub(super) fn long(&self, name: &str) -> bool {
        self.longs.iter().any(|long| abbreviates(long, name))
    }

    /// The value of an option given by letter or long name (abbreviations included).
    pub(super) fn value<'s>(&'s self, names: &'s [&str]) -> Option<&'s Word<'t>> {
        self.values(names).next()
    }

    /// Every value given to the options named by letter or long name.
    pub(super) fn values<'s>(&'s self, names: &'s [&str]) -> impl Iterator<Item = &'s Word<'t>> {
        self.values
            .iter()
            .filter(|(given, _)| {
                names.iter().any(|name| {
                    given == name || (given.chars().count() > 1 && abbreviates(given, name))
                })
            })
            .map(|(_, value)| value)
    }

    /// Whether an option was given, by letter or long name, with or without a value.
    pub(super) fn has(&self, letter: char, long: &str) -> bool {
        self.short(letter) || self.long(long) || self.value(&[&letter.to_string(), long]).is_some()
    }
}

/// Whether `given` (a long option name as written, without dashes and `=value`) may stand
/// for `full`: GNU `getopt_long` accepts any unambiguous prefix. Ambiguous prefixes are
/// counted as well, since which option they mean depends on the program's version.
pub(super) fn abbreviates(given: &str, full: &str) -> bool {
    let name = given.split_once('=').map_or(given, |(name, _)| name);
    !name.is_empty() && full.starts_with(name)
}

/// Whether a literal argument is the long option `--full`, spelled out or abbreviated, with
/// or without `=value`.
pub(super) fn is_long(arg: &str, full: &str) -> bool {
    arg.strip_prefix("--")
        .is_some_and(|given| abbreviates(given, full))
}
