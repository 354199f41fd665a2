//! SVG pictures made fit to embed in an HTML page: only what collbench-analyze
//! draws is accepted (the root element and element kinds its SVG backend
//! writes), and it is written anew element by element, so no script, event
//! handler or link to anything outside the page survives.
use crate::html::escape;

/// The SVG namespace, the only one a drawn element may be in.
const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";

/// The elements the plots' SVG backend writes below the root (a bitmap
/// `image` only with a feature this crate does not build).
const ELEMENTS: [&str; 6] = ["circle", "line", "polyline", "polygon", "rect", "text"];

/// The attributes those elements carry; any other is dropped.
const ATTRIBUTES: [&str; 23] = [
    "x",
    "y",
    "x1",
    "y1",
    "x2",
    "y2",
    "cx",
    "cy",
    "r",
    "width",
    "height",
    "points",
    "opacity",
    "fill",
    "stroke",
    "stroke-width",
    "dy",
    "text-anchor",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "transform",
];

/// An SVG document ready to be placed in a page, and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub svg: String,
    /// What was dropped, once each: `<script> element`, `onload event handler`.
    pub dropped: Vec<String>,
}

/// Why an SVG file is not one collbench-analyze drew.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EmbedError {
    #[error("not well-formed SVG: {0}")]
    Xml(String),
    #[error(
        "its root element is {0}, not the <svg width height viewBox> that collbench-analyze writes"
    )]
    Root(String),
    #[error("it holds {0}, which collbench-analyze never draws (accepted: circle, line, polyline, polygon, rect, text)")]
    Element(String),
}

/// Checks that `text` is an SVG document collbench-analyze drew and writes
/// it anew: kept elements and attributes only, every value and text escaped.
pub fn embed_svg(text: &str) -> Result<Embedded, EmbedError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = roxmltree::Document::parse(text).map_err(|e| EmbedError::Xml(e.to_string()))?;
    let root = doc.root_element();
    let size = |name: &str| {
        root.attribute(name)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let (Some(width), Some(height), Some(view_box)) =
        (size("width"), size("height"), root.attribute("viewBox"))
    else {
        return Err(EmbedError::Root(describe(&root)));
    };
    if root.tag_name().name() != "svg" || root.tag_name().namespace() != Some(SVG_NAMESPACE) {
        return Err(EmbedError::Root(describe(&root)));
    }
    let mut dropped = Vec::new();
    for attribute in root.attributes() {
        if !matches!(attribute.name(), "width" | "height" | "viewBox") {
            drop_once(&mut dropped, attribute_kind(attribute.name()));
        }
    }
    let mut svg = format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"{}\" xmlns=\"{SVG_NAMESPACE}\">\n",
        escape(view_box)
    );
    for node in root.children() {
        if !node.is_element() {
            continue;
        }
        if is_script(&node) {
            drop_once(&mut dropped, "<script> element".to_string());
            continue;
        }
        let name = drawn_element(&node)?;
        svg.push('<');
        svg.push_str(name);
        for attribute in node.attributes() {
            let kept = attribute.namespace().is_none()
                && ATTRIBUTES.contains(&attribute.name())
                && !attribute.value().to_ascii_lowercase().contains("url(");
            if kept {
                svg.push_str(&format!(
                    " {}=\"{}\"",
                    attribute.name(),
                    escape(attribute.value())
                ));
            } else {
                drop_once(&mut dropped, attribute_kind(attribute.name()));
            }
        }
        svg.push('>');
        for child in node.children() {
            if let Some(text) = child.text().filter(|_| child.is_text()) {
                svg.push_str(&escape(text));
            } else if is_script(&child) {
                drop_once(&mut dropped, "<script> element".to_string());
            } else if child.is_element() {
                return Err(EmbedError::Element(format!(
                    "{} inside <{name}>",
                    describe(&child)
                )));
            }
        }
        svg.push_str(&format!("</{name}>\n"));
    }
    svg.push_str("</svg>\n");
    Ok(Embedded { svg, dropped })
}

fn is_script(node: &roxmltree::Node) -> bool {
    node.is_element() && node.tag_name().name().eq_ignore_ascii_case("script")
}

/// The element's name when it is one the plots draw, in the SVG namespace.
fn drawn_element(node: &roxmltree::Node) -> Result<&'static str, EmbedError> {
    let tag = node.tag_name();
    ELEMENTS
        .iter()
        .find(|e| **e == tag.name() && tag.namespace() == Some(SVG_NAMESPACE))
        .copied()
        .ok_or_else(|| EmbedError::Element(describe(node)))
}

/// `<foreignObject>`, or `<svg> (in namespace …)` when it is not SVG's.
fn describe(node: &roxmltree::Node) -> String {
    let tag = node.tag_name();
    match tag.namespace() {
        Some(SVG_NAMESPACE) => format!("<{}>", tag.name()),
        Some(other) => format!("<{}> (namespace {other})", tag.name()),
        None => format!("<{}> (no SVG namespace)", tag.name()),
    }
}

/// How a dropped attribute is named: event handlers and links by what they are.
fn attribute_kind(name: &str) -> String {
    if name.len() > 2 && name[..2].eq_ignore_ascii_case("on") {
        format!("{name} event handler")
    } else if name.eq_ignore_ascii_case("href") {
        "href link".to_string()
    } else {
        format!("{name} attribute")
    }
}

fn drop_once(dropped: &mut Vec<String>, what: String) {
    if !dropped.contains(&what) {
        dropped.push(what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"<svg width="960" height="620" viewBox="0 0 960 620" xmlns="http://www.w3.org/2000/svg">"#;

    #[test]
    fn a_drawn_plot_is_kept_whole() {
        let svg = format!(
            "{HEAD}\n<rect x=\"0\" y=\"0\" width=\"960\" height=\"620\" opacity=\"1\" fill=\"#FFFFFF\" stroke=\"none\"/>\n\
             <text x=\"5\" y=\"9\" font-family=\"sans-serif\">a &lt; b &amp; c</text>\n</svg>\n"
        );
        let embedded = embed_svg(&svg).unwrap();
        assert!(embedded.dropped.is_empty(), "{:?}", embedded.dropped);
        assert!(embedded.svg.contains(
            "<rect x=\"0\" y=\"0\" width=\"960\" height=\"620\" opacity=\"1\" fill=\"#FFFFFF\" stroke=\"none\">"
        ));
        assert!(embedded
            .svg
            .contains("<text x=\"5\" y=\"9\" font-family=\"sans-serif\">a &lt; b &amp; c</text>"));
    }

    #[test]
    fn scripts_handlers_and_outside_links_are_dropped() {
        let svg = format!(
            "{HEAD}<script>alert(1)</script><rect width=\"1\" height=\"1\" onclick=\"alert(2)\" \
             fill=\"url(https://example.com/x)\"/><text x=\"1\" xmlns:xl=\"http://www.w3.org/1999/xlink\" \
             xl:href=\"https://example.com/\">t<script>alert(3)</script></text></svg>"
        );
        let embedded = embed_svg(&svg).unwrap();
        for gone in ["script", "alert", "onclick", "example.com", "href"] {
            assert!(!embedded.svg.contains(gone), "{gone}: {}", embedded.svg);
        }
        assert_eq!(
            embedded.dropped,
            [
                "<script> element",
                "onclick event handler",
                "fill attribute",
                "href link"
            ]
        );
    }

    #[test]
    fn other_pictures_are_refused() {
        let html = embed_svg("<html><body/></html>").unwrap_err();
        assert!(
            html.to_string().contains("root element is <html>"),
            "{html}"
        );
        let foreign = format!("{HEAD}<foreignObject/></svg>");
        assert_eq!(
            embed_svg(&foreign).unwrap_err(),
            EmbedError::Element("<foreignObject>".into())
        );
        let image = format!("{HEAD}<image href=\"x.png\"/></svg>");
        assert!(matches!(embed_svg(&image), Err(EmbedError::Element(_))));
        let no_size = r#"<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>"#;
        assert!(matches!(embed_svg(no_size), Err(EmbedError::Root(_))));
        // A document type (and its entities) is refused by the parser.
        let dtd = format!("<!DOCTYPE svg [<!ENTITY a \"aaaa\">]>{HEAD}<text>&a;</text></svg>");
        assert!(matches!(embed_svg(&dtd), Err(EmbedError::Xml(_))));
        assert!(matches!(embed_svg("not xml"), Err(EmbedError::Xml(_))));
    }
}
