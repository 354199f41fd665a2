//! HTML text from anything an input may hold: every character that could
//! open markup or end an attribute is escaped, so a hostname of
//! `<script>` is shown as text.

/// `text` escaped for an HTML (or SVG) text node or quoted attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            escape(r#"<script>alert("a & 'b'")</script>"#),
            "&lt;script&gt;alert(&quot;a &amp; &#39;b&#39;&quot;)&lt;/script&gt;"
        );
        assert_eq!(escape("node-a01 · 8 GPUs"), "node-a01 · 8 GPUs");
    }
}
