//! HAProxy log-format strings: parsed once at start into text, separators and variables (with the `+Q`
//! quoting, `+X` hexadecimal and `+E` escaping options, and `%{...}o` options for all variables after it).
//! The value given to the router is first read the way HAProxy's configuration parser reads the one argument
//! of `log-format` (OpenShift's template writes ROUTER_SYSLOG_FORMAT into that line as it is): double quotes,
//! single quotes and backslash escapes are removed. Unlike HAProxy, unescaped spaces are accepted too.

use super::variables::{lookup, names, Variable};

/// The default of `option httplog` in HAProxy 2.6.
pub const HTTPLOG_FORMAT: &str =
    "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r";

/// The default of `option tcplog` in HAProxy 2.6.
pub const TCPLOG_FORMAT: &str = "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `+Q`: the value in double quotes.
    pub quote: bool,
    /// `+X`: numbers and addresses in hexadecimal.
    pub hex: bool,
    /// `+E`: `"`, `\` and `]` escaped with a backslash.
    pub escape: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Text(String),
    /// One or more spaces: written as one space, and not at all right after another separator.
    Separator,
    Variable(Variable, Options),
}

/// A parsed log-format string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFormat {
    pub nodes: Vec<Node>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("unknown log-format variable %{name} at byte {at}; known: {known}", known = names())]
    UnknownVariable { name: String, at: usize },
    #[error("log-format sample expressions (%[...]) are not supported (at byte {at})")]
    SampleExpression { at: usize },
    #[error("log-format: unknown option {option:?} at byte {at} (known: +Q -Q +X -X +E -E)")]
    UnknownOption { option: String, at: usize },
    #[error("log-format: {what} at byte {at}")]
    Syntax { what: &'static str, at: usize },
    #[error("log-format: unterminated {0} quote")]
    UnterminatedQuote(char),
}

impl LogFormat {
    /// Parses a format as written in a HAProxy configuration (quotes and backslashes included).
    pub fn parse_config(value: &str) -> Result<LogFormat, FormatError> {
        LogFormat::parse(&config_unquote(value)?)
    }

    /// Parses a format already unquoted.
    pub fn parse(format: &str) -> Result<LogFormat, FormatError> {
        let bytes = format.as_bytes();
        let mut nodes = Vec::new();
        let mut text = String::new();
        let mut global = Options::default();
        let mut i = 0;
        let flush = |text: &mut String, nodes: &mut Vec<Node>| {
            if !text.is_empty() {
                nodes.push(Node::Text(std::mem::take(text)));
            }
        };
        while i < bytes.len() {
            match bytes[i] {
                b' ' => {
                    flush(&mut text, &mut nodes);
                    if nodes.last() != Some(&Node::Separator) {
                        nodes.push(Node::Separator);
                    }
                    i += 1;
                }
                b'%' if bytes.get(i + 1) == Some(&b'%') => {
                    text.push('%');
                    i += 2;
                }
                b'%' => {
                    let at = i;
                    i += 1;
                    let mut options = global;
                    if bytes.get(i) == Some(&b'{') {
                        let end = format[i..].find('}').ok_or(FormatError::Syntax { what: "unclosed %{", at })? + i;
                        apply_options(&format[i + 1..end], &mut options, i + 1)?;
                        i = end + 1;
                    }
                    if bytes.get(i) == Some(&b'[') {
                        return Err(FormatError::SampleExpression { at });
                    }
                    let start = i;
                    while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                        i += 1;
                    }
                    let name = &format[start..i];
                    if name.is_empty() {
                        return Err(FormatError::Syntax { what: "% without a variable name", at });
                    }
                    flush(&mut text, &mut nodes);
                    if name == "o" {
                        global = options;
                        continue;
                    }
                    let variable =
                        lookup(name).ok_or_else(|| FormatError::UnknownVariable { name: name.to_string(), at })?;
                    nodes.push(Node::Variable(variable, options));
                }
                _ => {
                    let next = format[i..].find([' ', '%']).map_or(format.len(), |n| n + i);
                    text.push_str(&format[i..next]);
                    i = next;
                }
            }
        }
        flush(&mut text, &mut nodes);
        Ok(LogFormat { nodes })
    }

    pub fn uses(&self, wanted: Variable) -> bool {
        self.nodes.iter().any(|node| matches!(node, Node::Variable(variable, _) if *variable == wanted))
    }
}

/// `+Q,-X,...` (HAProxy also separates them with commas).
fn apply_options(list: &str, options: &mut Options, at: usize) -> Result<(), FormatError> {
    for option in list.split(',').filter(|o| !o.is_empty()) {
        let (on, letter) = match option.as_bytes() {
            [b'+', letter] => (true, *letter),
            [b'-', letter] => (false, *letter),
            _ => return Err(FormatError::UnknownOption { option: option.to_string(), at }),
        };
        match letter {
            b'Q' => options.quote = on,
            b'X' => options.hex = on,
            b'E' => options.escape = on,
            _ => return Err(FormatError::UnknownOption { option: option.to_string(), at }),
        }
    }
    Ok(())
}

/// Reads a value the way HAProxy's configuration parser reads a word: `"..."` with backslash escapes inside,
/// `'...'` taken literally, a backslash outside quotes escaping the next character.
pub fn config_unquote(value: &str) -> Result<String, FormatError> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(escaped) => out.push(escaped),
                        None => return Err(FormatError::UnterminatedQuote('"')),
                    },
                    Some(other) => out.push(other),
                    None => return Err(FormatError::UnterminatedQuote('"')),
                }
            },
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(other) => out.push(other),
                    None => return Err(FormatError::UnterminatedQuote('\'')),
                }
            },
            '\\' => {
                if let Some(escaped) = chars.next() {
                    out.push(escaped);
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_formats_parse() {
        let http = LogFormat::parse(HTTPLOG_FORMAT).expect("httplog");
        assert!(http.uses(Variable::RequestLine));
        assert_eq!(http.nodes[0], Node::Variable(Variable::ClientIp, Options::default()));
        assert_eq!(http.nodes[1], Node::Text(":".into()));
        let quoted = Options { quote: true, ..Options::default() };
        assert_eq!(http.nodes.last(), Some(&Node::Variable(Variable::RequestLine, quoted)));
        let tcp = LogFormat::parse(TCPLOG_FORMAT).expect("tcplog");
        assert!(tcp.uses(Variable::TotalTime) && !tcp.uses(Variable::RequestLine));
    }

    #[test]
    fn unknown_variables_and_sample_expressions_are_refused() {
        assert_eq!(
            LogFormat::parse("%ci %zz").expect_err("unknown"),
            FormatError::UnknownVariable { name: "zz".into(), at: 4 }
        );
        assert!(LogFormat::parse("%ci %[ssl_c_s_dn]").expect_err("sample").to_string().contains("%[...]"));
        assert!(matches!(LogFormat::parse("%{+Z}ci"), Err(FormatError::UnknownOption { .. })));
        assert!(matches!(LogFormat::parse("50% off"), Err(FormatError::Syntax { .. })));
    }

    #[test]
    fn global_options_apply_to_later_variables() {
        let format = LogFormat::parse("%{+X}o %ci:%cp_%{-X}Ts").expect("unique-id format");
        let hex = Options { hex: true, ..Options::default() };
        assert_eq!(format.nodes[0], Node::Separator);
        assert_eq!(format.nodes[1], Node::Variable(Variable::ClientIp, hex));
        assert_eq!(format.nodes[4], Node::Text("_".into()));
        assert_eq!(format.nodes[5], Node::Variable(Variable::AcceptTimestamp, Options::default()));
    }

    #[test]
    fn configuration_quoting_is_removed() {
        assert_eq!(config_unquote(r#""%ci [%t] \"%r\"""#).expect("quoted"), r#"%ci [%t] "%r""#);
        assert_eq!(config_unquote(r"%ci\ %ST").expect("escaped"), "%ci %ST");
        assert_eq!(config_unquote("'%ci %ST'").expect("single"), "%ci %ST");
        assert_eq!(config_unquote("\"%ci").expect_err("open"), FormatError::UnterminatedQuote('"'));
        let parsed = LogFormat::parse_config("\"%ci  %%  %ST\"").expect("format");
        assert_eq!(parsed.nodes.len(), 5, "{parsed:?}");
    }
}
