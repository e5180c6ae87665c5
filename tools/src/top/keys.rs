//! `top`'s keys, configurable in a TOML file
//! (`$XDG_CONFIG_HOME/scx_chameleon/top.toml`, else
//! `~/.config/scx_chameleon/top.toml`):
//!
//! ```toml
//! [keys]
//! quit = "q"
//! pause = "p"
//! view = "v"
//! cgroups = "c"
//! ```
//!
//! A file that does not parse, names an unknown action, or gives two actions
//! the same key is reported (line and field) and the default keys are used
//! whole: a half-applied file would leave keys nobody chose. Enter, Esc,
//! Backspace and Ctrl-C keep their meaning (filter input, clear, quit).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The key of each action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    pub quit: char,
    pub pause: char,
    pub help: char,
    pub filter: char,
    pub view: char,
    pub history: char,
    /// Execution objects / one row per tagged cgroup.
    pub cgroups: char,
}

impl Default for KeyMap {
    fn default() -> Self {
        KeyMap { quit: 'q', pause: 'p', help: '?', filter: '/', view: 'v', history: 'h', cgroups: 'c' }
    }
}

/// The actions by their name in the file, in the order help lists them.
pub const ACTIONS: [&str; 7] = ["quit", "pause", "help", "filter", "view", "history", "cgroups"];

impl KeyMap {
    fn slot(&mut self, action: &str) -> Option<&mut char> {
        Some(match action {
            "quit" => &mut self.quit,
            "pause" => &mut self.pause,
            "help" => &mut self.help,
            "filter" => &mut self.filter,
            "view" => &mut self.view,
            "history" => &mut self.history,
            "cgroups" => &mut self.cgroups,
            _ => return None,
        })
    }

    fn get(&self, action: &str) -> Option<char> {
        Some(match action {
            "quit" => self.quit,
            "pause" => self.pause,
            "help" => self.help,
            "filter" => self.filter,
            "view" => self.view,
            "history" => self.history,
            "cgroups" => self.cgroups,
            _ => return None,
        })
    }
}

/// What the file may hold: one [keys] table (anything else is refused by
/// name). Entries keep their place in the text for the error messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    keys: BTreeMap<toml::Spanned<String>, toml::Spanned<toml::Value>>,
}

/// Line (from 1) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// Parse a key file's text. The error names the line and the field.
pub fn parse(text: &str) -> Result<KeyMap, String> {
    let spec: FileSpec = toml::from_str(text).map_err(|e| match e.span() {
        Some(s) => format!("line {}: {}", line_of(text, s.start), e.message().trim_end()),
        None => e.message().trim_end().to_string(),
    })?;
    let mut keys = KeyMap::default();
    // (action, line) of those the file sets, for the duplicate message.
    let mut set: Vec<(String, usize)> = Vec::new();
    for (name, value) in &spec.keys {
        let line = line_of(text, name.span().start);
        let action = name.get_ref().as_str();
        let Some(slot) = keys.slot(action) else {
            return Err(format!("line {line}: keys.{action}: unknown action (known: {})", ACTIONS.join(", ")));
        };
        let c = match value.get_ref() {
            toml::Value::String(s) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if !c.is_whitespace() && !c.is_control() => c,
                    _ => {
                        return Err(format!(
                            "line {line}: keys.{action}: {s:?} is not one printable character (like \"q\")"
                        ))
                    }
                }
            }
            other => {
                return Err(format!(
                    "line {line}: keys.{action}: expected a one-character string like \"q\", got {}",
                    other.type_str()
                ))
            }
        };
        *slot = c;
        set.push((action.to_string(), line));
    }
    // Two actions on one key: the one set in the file is named (with its
    // line), and the other, set there too or left at its default.
    for (action, line) in &set {
        let c = keys.get(action);
        if let Some(other) = ACTIONS.iter().find(|a| **a != action.as_str() && keys.get(a) == c) {
            let c = c.unwrap_or_default();
            let how = if set.iter().any(|(a, _)| a.as_str() == *other) { "" } else { " (its default)" };
            return Err(format!("line {line}: keys.{action}: {c:?} is also the key of {other}{how}"));
        }
    }
    Ok(keys)
}

/// Where the file is looked for: $XDG_CONFIG_HOME, else ~/.config.
pub fn default_path() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some(base.join("scx_chameleon").join("top.toml"))
}

/// The keys from `path`, and a notice if the file was bad (defaults used).
/// A missing file is the defaults, silently, unless the user named it.
pub fn load(path: &Path, named: bool) -> (KeyMap, Option<String>) {
    match std::fs::read_to_string(path) {
        Ok(text) => match parse(&text) {
            Ok(k) => (k, None),
            Err(e) => (KeyMap::default(), Some(format!("{}: {e}; using the default keys", path.display()))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => (KeyMap::default(), None),
        Err(e) => (KeyMap::default(), Some(format!("{}: {e}; using the default keys", path.display()))),
    }
}

#[cfg(test)]
mod tests;
