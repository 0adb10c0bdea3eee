//! Keys a config file holds that the schema does not know: found while deserializing (with
//! `serde_ignored`), reported as warnings naming the key, the file and the nearest known key.

use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Visitor};

/// Deserializes `T` from `value` only to collect the keys it ignores, as paths of segments
/// (`["retry", "maxRetrys"]`). Keys of a file that does not fit `T` are collected up to the
/// point where it stops; the real parse reports the error.
pub(crate) fn ignored_keys<T: for<'de> Deserialize<'de>>(
    value: &serde_json::Value,
) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let _ = serde_ignored::deserialize::<_, _, T>(value, |path| found.push(segments(&path)));
    found
}

/// The warning for one unknown key: `file: unknown key "a.b"`, with the nearest of `known`
/// when one is close enough to be a likely typo.
pub(crate) fn warning(file: &Path, key: &[String], known: &[&str]) -> String {
    let name = key.last().map(String::as_str).unwrap_or_default();
    let mut message = format!("{}: unknown key {}", file.display(), quoted(&key.join(".")));
    if let Some(nearest) = nearest(name, known) {
        message.push_str(&format!(" (did you mean \"{nearest}\"?)"));
    }
    message.push_str("; it is ignored");
    message
}

/// The characters of an unknown key a warning quotes; a longer key is cut, its length said.
const SHOWN_KEY_CHARS: usize = 80;

/// `key` in quotes as a warning shows it: whole, or its start and how long it is.
fn quoted(key: &str) -> String {
    let length = key.chars().count();
    if length <= SHOWN_KEY_CHARS {
        return format!("\"{key}\"");
    }
    let start: String = key.chars().take(SHOWN_KEY_CHARS).collect();
    format!("\"{start}…\" ({length} characters)")
}

/// The known key closest to `name` by edit distance (Damerau-Levenshtein, ignoring case;
/// a swap of two letters counts one), when it is a likely typo: at most one edit for short
/// keys, a third of the length for longer ones. Ties go to the key of the same length.
fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let name = name.to_lowercase();
    let length = name.chars().count();
    let allowed = (length / 3).max(1);
    known
        .iter()
        // The distance is at least the difference in length: a key far longer than any
        // known one (a hostile file's) costs no comparison of its characters.
        .filter(|candidate| length.abs_diff(candidate.chars().count()) <= allowed)
        .map(|candidate| {
            let distance = strsim::damerau_levenshtein(&name, &candidate.to_lowercase());
            let length_gap = name.len().abs_diff(candidate.len());
            (distance, length_gap, *candidate)
        })
        .filter(|(distance, _, _)| *distance <= allowed)
        .min_by_key(|(distance, length_gap, _)| (*distance, *length_gap))
        .map(|(_, _, candidate)| candidate)
}

/// The field names a derived `Deserialize` struct accepts (its renamed names and aliases),
/// read from what it asks of a deserializer. Empty for anything but a plain struct.
pub(crate) fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path;
    let mut out = match path {
        Path::Root => return Vec::new(),
        Path::Seq { parent, .. }
        | Path::Map { parent, .. }
        | Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => segments(parent),
    };
    match path {
        Path::Seq { index, .. } => out.push(index.to_string()),
        Path::Map { key, .. } => out.push(key.clone()),
        _ => {}
    }
    out
}

/// A deserializer that only records the fields a struct asks for.
struct Fields<'a>(&'a mut &'static [&'static str]);

impl<'de> de::Deserializer<'de> for Fields<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Sample {
        max_steps: Option<u32>,
        #[serde(default)]
        retry: Inner,
    }

    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Inner {
        max_retries: Option<u32>,
    }

    #[test]
    fn unknown_keys_are_found_at_any_depth_with_the_nearest_known_key() {
        let value = serde_json::json!({"maxStep": 3, "retry": {"maxRetrys": 1, "zzz": 2}});
        let keys = ignored_keys::<Sample>(&value);
        assert_eq!(
            keys,
            [
                vec!["maxStep"],
                vec!["retry", "maxRetrys"],
                vec!["retry", "zzz"]
            ]
        );
        assert_eq!(fields_of::<Sample>(), ["maxSteps", "retry"]);
        let file = Path::new("/w/.coder/config.json");
        assert_eq!(
            warning(file, &keys[1], fields_of::<Inner>()),
            "/w/.coder/config.json: unknown key \"retry.maxRetrys\" (did you mean \"maxRetries\"?); it is ignored"
        );
        assert_eq!(
            warning(file, &keys[2], fields_of::<Inner>()),
            "/w/.coder/config.json: unknown key \"retry.zzz\"; it is ignored"
        );
        assert_eq!(nearest("MODEL", &["model", "mode"]), Some("model"));
    }

    #[test]
    fn a_long_unknown_key_is_quoted_by_its_start_and_gets_no_hint() {
        let file = Path::new("/w/.coder/config.json");
        let long = "é".repeat(200);
        assert_eq!(
            warning(file, std::slice::from_ref(&long), &["model"]),
            format!(
                "/w/.coder/config.json: unknown key \"{}…\" (200 characters); it is ignored",
                "é".repeat(80)
            )
        );
        // Within a third of its length of a known key's, a long key still gets its hint.
        assert_eq!(
            nearest("maxOutputTokensss", &["maxOutputTokens"]),
            Some("maxOutputTokens")
        );
        assert_eq!(nearest(&"m".repeat(1_000_000), &["model"]), None);
    }
}
