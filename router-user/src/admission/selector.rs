//! Kubernetes label selectors in their string form (`ROUTE_LABELS`, `NAMESPACE_LABELS`): comma-separated
//! requirements `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist).

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    text: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct SelectorError {
    pub selector: String,
    pub reason: String,
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
        let error = |reason: &str| SelectorError { selector: text.to_string(), reason: reason.to_string() };
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part).map_err(|reason| error(&reason))?);
        }
        Ok(LabelSelector { requirements, text: text.trim().to_string() })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key));
        self.requirements.iter().all(|requirement| match requirement {
            Requirement::Equals(k, v) => get(k) == Some(v),
            Requirement::NotEquals(k, v) => get(k) != Some(v),
            Requirement::In(k, values) => get(k).is_some_and(|have| values.contains(have)),
            Requirement::NotIn(k, values) => get(k).is_none_or(|have| !values.contains(have)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits on commas that are not inside a `( ... )` value set.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(label_key(key.trim())?));
    }
    for (operator, build) in [
        ("!=", Requirement::NotEquals as fn(String, String) -> Requirement),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((key, value)) = part.split_once(operator) {
            return Ok(build(label_key(key.trim())?, label_value(value.trim())?));
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words[..] {
        let rest = rest.trim();
        let (notin, set) = if let Some(set) = rest.strip_prefix("notin") {
            (true, set)
        } else if let Some(set) = rest.strip_prefix("in") {
            (false, set)
        } else {
            return Err(format!("unknown operator in {part:?}"));
        };
        let set = set.trim();
        let inner = set
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .ok_or_else(|| format!("expected a (value, ...) set in {part:?}"))?;
        let values = inner.split(',').map(|v| label_value(v.trim())).collect::<Result<Vec<_>, _>>()?;
        let key = label_key(key)?;
        return Ok(if notin { Requirement::NotIn(key, values) } else { Requirement::In(key, values) });
    }
    Ok(Requirement::Exists(label_key(part)?))
}

fn label_key(key: &str) -> Result<String, String> {
    let valid = !key.is_empty()
        && key.len() <= 317
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(key.to_string())
    } else {
        Err(format!("invalid label key {key:?}"))
    }
}

fn label_value(value: &str) -> Result<String, String> {
    let valid = value.len() <= 63 && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(value.to_string())
    } else {
        Err(format!("invalid label value {value:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn selector_syntax_matches_like_kubernetes() {
        let shard = labels(&[("router", "internal"), ("env", "prod")]);
        let cases = [
            ("", true),
            ("router=internal", true),
            ("router==internal", true),
            ("router=external", false),
            ("router!=external", true),
            ("router!=internal", false),
            ("env in (prod, staging)", true),
            ("env notin (prod)", false),
            ("env notin (dev)", true),
            ("missing notin (x)", true),
            ("missing in (x)", false),
            ("router", true),
            ("!router", false),
            ("!missing", true),
            ("router=internal,env in (prod)", true),
            ("router=internal, env=dev", false),
        ];
        for (text, want) in cases {
            let selector = LabelSelector::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(selector.matches(Some(&shard)), want, "{text:?}");
        }
        assert!(!LabelSelector::parse("router").expect("parse").matches(None));
    }

    #[test]
    fn bad_selectors_are_errors() {
        for text in ["router=in valid", "env in prod", "env in (a b)", "=x", "a b c"] {
            assert!(LabelSelector::parse(text).is_err(), "{text:?}");
        }
    }
}
