//! Narrative XHTML (`text.div`) split into markup and text so that only the text is
//! de-identified and the result stays well-formed: text nodes are decoded, scrubbed and
//! escaped again; comments are dropped; tags keep only presentational attributes (an `alt`,
//! `title`, `href` or `src` can carry PHI); active content (scripts, forms, frames) is refused.

/// A narrative: its pieces in order.
#[derive(Debug)]
pub struct Narrative {
    pieces: Vec<Piece>,
}

#[derive(Debug)]
enum Piece {
    /// A tag, already rebuilt with only the allowed attributes.
    Markup { tag: String, inline: bool },
    /// A text node, decoded.
    Text(String),
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum XhtmlError {
    #[error("narrative holds active content (<{0}>)")]
    Unsafe(String),
    #[error("narrative is not well-formed XHTML")]
    Malformed,
}

/// Tags whose content is active or a form: a narrative holding one is refused.
const UNSAFE: &[&str] = &[
    "script", "iframe", "object", "embed", "form", "input", "button", "select", "textarea", "link",
    "meta", "base", "frame", "frameset", "applet", "style",
];
/// Attributes kept on a tag: layout only.
const KEPT_ATTRIBUTES: &[&str] = &[
    "xmlns",
    "class",
    "style",
    "colspan",
    "rowspan",
    "lang",
    "xml:lang",
    "dir",
    "align",
    "valign",
    "width",
    "border",
    "cellpadding",
    "cellspacing",
    "scope",
];
/// Tags that do not break a sentence: text on both sides reads as one.
const INLINE: &[&str] = &[
    "a", "b", "i", "u", "em", "strong", "span", "sub", "sup", "small", "big", "code", "tt", "abbr",
    "acronym", "cite", "q", "font",
];

pub fn parse(div: &str) -> Result<Narrative, XhtmlError> {
    let mut pieces = Vec::new();
    // Open elements: every one must be closed, in order, for the narrative to be well-formed.
    let mut open: Vec<&str> = Vec::new();
    let mut rest = div;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<!--") {
            let end = after.find("-->").ok_or(XhtmlError::Malformed)?;
            rest = &after[end + 3..];
        } else if rest.starts_with("<!") || rest.starts_with("<?") {
            return Err(XhtmlError::Unsafe("!".into()));
        } else if rest.starts_with('<') {
            let end = tag_end(rest).ok_or(XhtmlError::Malformed)?;
            let body = &rest[1..end];
            pieces.push(tag(body)?);
            let name = body
                .trim_start_matches('/')
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap_or_default();
            if body.starts_with('/') {
                if open.pop() != Some(name) {
                    return Err(XhtmlError::Malformed);
                }
            } else if !body.trim_end().ends_with('/') {
                open.push(name);
            }
            rest = &rest[end + 1..];
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            pieces.push(Piece::Text(decode(&rest[..end])));
            rest = &rest[end..];
        }
    }
    if !open.is_empty() {
        return Err(XhtmlError::Malformed);
    }
    Ok(Narrative { pieces })
}

/// Byte index of the `>` closing the tag that starts `s`, skipping quoted values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(i),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

/// Rebuilds a tag body (between `<` and `>`) keeping only the allowed attributes.
fn tag(body: &str) -> Result<Piece, XhtmlError> {
    let (closing, body) = match body.strip_prefix('/') {
        Some(b) => (true, b),
        None => (false, body),
    };
    let (body, self_closing) = match body.trim_end().strip_suffix('/') {
        Some(b) => (b, true),
        None => (body, false),
    };
    let name_end = body.find(|c: char| c.is_whitespace()).unwrap_or(body.len());
    let name = &body[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_'))
    {
        return Err(XhtmlError::Malformed);
    }
    let lower = name.to_ascii_lowercase();
    let local = lower.rsplit(':').next().unwrap_or(&lower);
    if UNSAFE.contains(&local) {
        return Err(XhtmlError::Unsafe(local.to_string()));
    }
    let mut out = String::with_capacity(body.len() + 3);
    out.push('<');
    if closing {
        out.push('/');
    }
    out.push_str(name);
    for (k, v) in attributes(&body[name_end..])? {
        if KEPT_ATTRIBUTES.contains(&k.to_ascii_lowercase().as_str()) {
            out.push(' ');
            out.push_str(k);
            out.push_str("=\"");
            out.push_str(&escape(&decode(v), true));
            out.push('"');
        }
    }
    if self_closing {
        out.push('/');
    }
    out.push('>');
    Ok(Piece::Markup {
        tag: out,
        inline: INLINE.contains(&local),
    })
}

fn attributes(mut s: &str) -> Result<Vec<(&str, &str)>, XhtmlError> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(out);
        }
        let eq = s.find('=').ok_or(XhtmlError::Malformed)?;
        let key = s[..eq].trim();
        let after = s[eq + 1..].trim_start();
        let q = after.chars().next().ok_or(XhtmlError::Malformed)?;
        if q != '"' && q != '\'' {
            return Err(XhtmlError::Malformed);
        }
        let end = after[1..].find(q).ok_or(XhtmlError::Malformed)? + 1;
        out.push((key, &after[1..end]));
        s = &after[end + 1..];
    }
}

/// Decodes the XML entities (and numeric references); an unknown entity stays as written.
fn decode(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find(';').filter(|&e| e <= 12);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some('\u{a0}'),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

impl Narrative {
    /// The text nodes joined as one text for the model (a line break where a block tag stood
    /// between two nodes), and each node's byte range in it.
    pub fn joined(&self) -> (String, Vec<std::ops::Range<usize>>) {
        let mut text = String::new();
        let mut ranges = Vec::new();
        let mut pending_break = false;
        for p in &self.pieces {
            match p {
                Piece::Markup { inline, .. } => pending_break |= !inline,
                Piece::Text(t) => {
                    if pending_break && !text.is_empty() {
                        text.push('\n');
                    }
                    pending_break = false;
                    let start = text.len();
                    text.push_str(t);
                    ranges.push(start..text.len());
                }
            }
        }
        (text, ranges)
    }

    /// The narrative with its text nodes replaced, in order, by `texts` (escaped here).
    pub fn rebuild(&self, texts: &[String]) -> String {
        let mut out = String::new();
        let mut texts = texts.iter();
        for p in &self.pieces {
            match p {
                Piece::Markup { tag, .. } => out.push_str(tag),
                Piece::Text(_) => {
                    if let Some(t) = texts.next() {
                        out.push_str(&escape(t, false));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_split_from_markup_and_rebuilt_escaped() {
        let div = r#"<div xmlns="http://www.w3.org/1999/xhtml"><p title="John Smith">Name: <b>John</b> Smith &amp; co</p><!-- MRN 123 --><img src="x.png" alt="photo of John"/><p>Seen &#x41;</p></div>"#;
        let n = parse(div).expect("parses");
        let (text, ranges) = n.joined();
        assert_eq!(text, "Name: John Smith & co\nSeen A");
        assert_eq!(ranges.len(), 4);
        let texts: Vec<String> = ranges
            .iter()
            .map(|r| text[r.clone()].replace("John", "<X>"))
            .collect();
        let out = n.rebuild(&texts);
        assert_eq!(
            out,
            r#"<div xmlns="http://www.w3.org/1999/xhtml"><p>Name: <b>&lt;X&gt;</b> Smith &amp; co</p><img/><p>Seen A</p></div>"#
        );
    }

    #[test]
    fn active_content_and_broken_markup_are_refused() {
        assert_eq!(
            parse("<div><script>alert(1)</script></div>").map(|_| ()),
            Err(XhtmlError::Unsafe("script".into()))
        );
        assert_eq!(parse("<div><p").map(|_| ()), Err(XhtmlError::Malformed));
        assert_eq!(
            parse("<div><!-- x</div>").map(|_| ()),
            Err(XhtmlError::Malformed)
        );
        assert!(parse("<div a=b>x</div>").is_err());
        assert_eq!(
            parse("<div><p>x</div>").map(|_| ()),
            Err(XhtmlError::Malformed)
        );
        assert_eq!(
            parse("<div>x</div></p>").map(|_| ()),
            Err(XhtmlError::Malformed)
        );
        assert!(parse("<div><br/><p>x</p></div>").is_ok());
    }
}
